package main

import (
	"context"
	"errors"
)

// Placeholder: the stock service issue replaces this file.
func runServe(ctx context.Context, args []string) error { return errors.New("serve: not built yet") }
