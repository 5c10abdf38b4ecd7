//go:build tools

// Package tools pins the Consul server the lab runs: 1.16.3, the newest
// release under MPL-2.0 (its module's LICENSE says so; later ones are
// under the BUSL). `make deps` builds it from the module proxy against
// this module's go.sum.
package tools

import _ "github.com/hashicorp/consul"
