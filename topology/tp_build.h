/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_build: building a snapshot from Kubernetes documents, in phases:
 * count the documents, check --levels, parse Nodes and HyperNodes, index
 * the exact Node members, insert the nodes in name order and apply the
 * bound Pods.  It owns the order of those phases and which problems stop
 * the build at once (limits, memory) and which are collected so that every
 * one is reported.  tp_snapshot_build is declared in tp_snapshot.h; this
 * header only ties the module to the snapshot's internals.
 */
#ifndef TP_BUILD_H
#define TP_BUILD_H

#include "tp_snapshot_int.h"

#endif
