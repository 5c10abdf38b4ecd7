//go:build tools

// Package tools pins staticcheck (honnef.co/go/tools) for `make lint`: its
// version is this module's requirement, its checksums are in go.sum, so
// CI builds the same binary without asking for @latest.
package tools

import _ "honnef.co/go/tools/cmd/staticcheck"
