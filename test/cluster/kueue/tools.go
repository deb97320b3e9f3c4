//go:build tools

// Package tools names the Kueue controller this module builds (sigs.k8s.io/kueue/cmd/kueue), so that
// go.mod and go.sum pin every module it needs. test/cluster/cluster.js builds it with `go build`.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
