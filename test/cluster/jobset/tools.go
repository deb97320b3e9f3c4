//go:build tools

// Package tools names the JobSet controller this module builds (its module root is the command), so
// that go.mod and go.sum pin every module it needs. test/cluster/cluster.js builds it with `go build`.
package tools

import _ "sigs.k8s.io/jobset"
