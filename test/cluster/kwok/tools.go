//go:build tools

// Package tools names the KWOK controller this module builds (sigs.k8s.io/kwok/cmd/kwok), so that
// go.mod and go.sum pin every module it needs. test/cluster/cluster.js builds it with `go build`; it
// simulates the kubelets of fake GPU nodes for the rollout tests (test/cluster/sim.ts).
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
