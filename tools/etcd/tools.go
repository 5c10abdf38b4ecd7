//go:build tools

// Package tools pins the etcd server the lab runs: 3.7.3, the newest the
// module proxy serves (distributions package 3.4, past its end of life).
// `make deps` builds it from the module proxy against this module's go.sum.
package tools

import _ "go.etcd.io/etcd/server/v3"
