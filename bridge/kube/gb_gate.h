/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gate: gangbridge's scheduling gate, the one name every layer that
 * touches it shares.  The webhook (controller/gb_webhook) adds it to a pod
 * of a gang that waits for a placement, the model (model/gb_model) counts a
 * pod that carries it as held, the release (placement/gb_release) removes it
 * with the decision's restriction, and the sweeper (placement/gb_gatesweep)
 * removes it from pods gangbridge does not hold.  It lives in kube/, the
 * lowest layer all of them use (controller/ and model/ may not include each
 * other).  Header only.
 */
#ifndef GB_GATE_H
#define GB_GATE_H

/* The name in a pod's spec.schedulingGates. */
#define GB_PLACEMENT_GATE "gangbridge.io/placement"

#endif
