package main

import (
	"context"
	"errors"
)

// Placeholder: the benchmark issue replaces this file.
func runBench(ctx context.Context, args []string) error { return errors.New("bench: not built yet") }
