//go:build tools

// Package tools names the control-plane commands this module builds, so that go.mod and go.sum pin
// every module they need. Nothing here runs; test/cluster/cluster.js builds each with `go build`.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
