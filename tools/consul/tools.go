//go:build tools

// Package tools pins the Consul server the lab runs: 1.16.1, the last
// release under MPL-2.0 (1.17 and later are under the BUSL). `make deps`
// builds it from the module proxy against this module's go.sum.
package tools

import _ "github.com/hashicorp/consul"
