/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_client: blocking unary client on gRPC C core.  Each call uses its
 * own pluck completion queue, so calls from several threads never see each
 * other's events.
 */
#include "gb_rpc_client.h"
#include "gb_rpc_client_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "gb_rpc.h"
#include "gb_tls_files.h"


struct gb_rpc_client {
  grpc_channel *channel;
};

void gb_rpc_status_clear(struct gb_rpc_status *st) {
  if (!st)
    return;
  free(st->message);
  st->message = NULL;
  st->code = GB_RPC_OK;
}

int gb_rpc_client_new(const struct gb_rpc_client_config *cfg, struct gb_rpc_client **out,
                      struct gc_diags *diags) {
  *out = NULL;
  if (!cfg->addr || !*cfg->addr) {
    gc_diags_addf(diags, "no server address (--addr HOST:PORT)");
    return GC_EUSAGE;
  }
  if (!!cfg->tls_cert_file != !!cfg->tls_key_file) {
    gc_diags_addf(diags, "--tls-cert and --tls-key go together");
    return GC_EUSAGE;
  }
  if (cfg->tls_cert_file && !cfg->tls_ca_file) {
    gc_diags_addf(diags, "--tls-cert needs --tls-ca (the server's CA)");
    return GC_EUSAGE;
  }
  char *ca = NULL, *cert = NULL, *key = NULL;
  int rc = 0;
  if (cfg->tls_ca_file &&
      ((rc = gb_tls_files_pem_read(cfg->tls_ca_file, &ca, diags)) ||
       (cfg->tls_cert_file && ((rc = gb_tls_files_pem_read(cfg->tls_cert_file, &cert, diags)) ||
                               (rc = gb_tls_files_pem_read(cfg->tls_key_file, &key, diags))))))
    goto out;
  struct gb_rpc_client *c = calloc(1, sizeof(*c));
  if (!c) {
    rc = GC_ENOMEM;
    goto out;
  }
  grpc_init();
  grpc_channel_credentials *creds;
  if (ca) {
    grpc_ssl_pem_key_cert_pair pair = {key, cert};
    creds = grpc_ssl_credentials_create(ca, cert ? &pair : NULL, NULL, NULL);
  } else {
    creds = grpc_insecure_credentials_create();
  }
  grpc_arg args[3];
  size_t nargs = 0;
  memset(args, 0, sizeof(args));
  args[nargs].type = GRPC_ARG_INTEGER;
  args[nargs].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
  args[nargs].value.integer =
      (int)(cfg->max_message_bytes ? cfg->max_message_bytes : GB_RPC_DEFAULT_MAX_MESSAGE);
  nargs++;
  if (cfg->tls_server_name) {
    args[nargs].type = GRPC_ARG_STRING;
    args[nargs].key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
    args[nargs].value.string = (char *)cfg->tls_server_name;
    nargs++;
  }
  if (cfg->fresh_connection) {
    args[nargs].type = GRPC_ARG_INTEGER;
    args[nargs].key = (char *)GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL;
    args[nargs].value.integer = 1;
    nargs++;
  }
  grpc_channel_args cargs = {nargs, args};
  c->channel = creds ? grpc_channel_create(cfg->addr, creds, &cargs) : NULL;
  if (creds)
    grpc_channel_credentials_release(creds);
  if (!c->channel) {
    gc_diags_addf(diags, "cannot create a channel to %s", cfg->addr);
    free(c);
    grpc_shutdown();
    rc = GC_EIO;
    goto out;
  }
  *out = c;
out:
  free(ca);
  free(cert);
  free(key);
  return rc;
}

void gb_rpc_client_free(struct gb_rpc_client *c) {
  if (!c)
    return;
  grpc_channel_destroy(c->channel);
  free(c);
  grpc_shutdown();
}

/* Runs one unary call with a packed request slice (consumed). */
static int call_slice(struct gb_rpc_client *c, const char *method, grpc_slice req,
                      int timeout_ms, grpc_slice *reply, int *has_reply,
                      struct gb_rpc_status *st) {
  st->code = GB_RPC_UNKNOWN;
  st->message = NULL;
  *has_reply = 0;
  grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
  gpr_timespec deadline =
      timeout_ms > 0 ? gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                    gpr_time_from_millis(timeout_ms, GPR_TIMESPAN))
                     : gpr_inf_future(GPR_CLOCK_REALTIME);
  grpc_slice mslice = grpc_slice_from_copied_string(method);
  grpc_call *call = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
                                             mslice, NULL, deadline, NULL);
  grpc_slice_unref(mslice);
  grpc_byte_buffer *send_bb = grpc_raw_byte_buffer_create(&req, 1);
  grpc_slice_unref(req);

  grpc_metadata_array init_md, trail_md;
  grpc_metadata_array_init(&init_md);
  grpc_metadata_array_init(&trail_md);
  grpc_byte_buffer *recv_bb = NULL;
  grpc_slice details = grpc_empty_slice();
  grpc_status_code status = GRPC_STATUS_UNKNOWN;
  grpc_op ops[6];
  memset(ops, 0, sizeof(ops));
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[1].op = GRPC_OP_SEND_MESSAGE;
  ops[1].data.send_message.send_message = send_bb;
  ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
  ops[4].op = GRPC_OP_RECV_MESSAGE;
  ops[4].data.recv_message.recv_message = &recv_bb;
  ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
  ops[5].data.recv_status_on_client.status = &status;
  ops[5].data.recv_status_on_client.status_details = &details;

  int rc = GC_EIO;
  int tag = 0;
  if (grpc_call_start_batch(call, ops, 6, &tag, NULL) == GRPC_CALL_OK) {
    grpc_event ev = grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME),
                                                NULL);
    if (ev.type == GRPC_OP_COMPLETE) {
      rc = 0;
      st->code = (int)status;
      size_t dl = GRPC_SLICE_LENGTH(details);
      st->message = malloc(dl + 1);
      if (st->message) {
        memcpy(st->message, GRPC_SLICE_START_PTR(details), dl);
        st->message[dl] = '\0';
      }
      if (status == GRPC_STATUS_OK && recv_bb) {
        grpc_byte_buffer_reader r;
        if (grpc_byte_buffer_reader_init(&r, recv_bb)) {
          *reply = grpc_byte_buffer_reader_readall(&r);
          grpc_byte_buffer_reader_destroy(&r);
          *has_reply = 1;
        }
      }
    }
  }
  grpc_slice_unref(details);
  if (recv_bb)
    grpc_byte_buffer_destroy(recv_bb);
  grpc_byte_buffer_destroy(send_bb);
  grpc_metadata_array_destroy(&init_md);
  grpc_metadata_array_destroy(&trail_md);
  grpc_call_unref(call);
  grpc_completion_queue_shutdown(cq);
  while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
         GRPC_QUEUE_SHUTDOWN)
    ;
  grpc_completion_queue_destroy(cq);
  return rc;
}

int gb_rpc_client_call(struct gb_rpc_client *c, const char *method, const ProtobufCMessage *req,
                       const ProtobufCMessageDescriptor *reply_desc, int timeout_ms,
                       ProtobufCMessage **reply, struct gb_rpc_status *st) {
  *reply = NULL;
  size_t len = protobuf_c_message_get_packed_size(req);
  grpc_slice s = grpc_slice_malloc(len);
  protobuf_c_message_pack(req, GRPC_SLICE_START_PTR(s));
  grpc_slice out;
  int has = 0;
  int rc = call_slice(c, method, s, timeout_ms, &out, &has, st);
  if (rc)
    return rc;
  if (st->code == GB_RPC_OK) {
    if (has) {
      *reply = protobuf_c_message_unpack(reply_desc, NULL, GRPC_SLICE_LENGTH(out),
                                         GRPC_SLICE_START_PTR(out));
    } else {
      /* An empty message is sent as zero bytes, which always decodes. */
      *reply = protobuf_c_message_unpack(reply_desc, NULL, 0, (const uint8_t *)"");
    }
    if (!*reply) {
      free(st->message);
      st->message = strdup("reply does not decode");
      st->code = GB_RPC_INTERNAL;
      rc = GC_EINVAL;
    }
  }
  if (has)
    grpc_slice_unref(out);
  return rc;
}

int gb_rpc_client_call_raw(struct gb_rpc_client *c, const char *method, const void *data,
                           size_t len, int timeout_ms, void **out, size_t *out_len,
                           struct gb_rpc_status *st) {
  *out = NULL;
  *out_len = 0;
  grpc_slice s = grpc_slice_from_copied_buffer(data, len);
  grpc_slice reply;
  int has = 0;
  int rc = call_slice(c, method, s, timeout_ms, &reply, &has, st);
  if (rc || !has)
    return rc;
  size_t n = GRPC_SLICE_LENGTH(reply);
  *out = malloc(n ? n : 1);
  if (!*out) {
    grpc_slice_unref(reply);
    return GC_ENOMEM;
  }
  memcpy(*out, GRPC_SLICE_START_PTR(reply), n);
  *out_len = n;
  grpc_slice_unref(reply);
  return 0;
}
