//go:build tools

// Package tools names the etcd server this module builds (its module root is the etcd command), so
// that go.mod and go.sum pin every module it needs. test/cluster/cluster.js builds it with `go build`.
package tools

import _ "go.etcd.io/etcd/server/v3"
