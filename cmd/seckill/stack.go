package main

import (
	"context"
	"errors"
)

// Placeholders: the local stack issue replaces this file.

func runUp(ctx context.Context, args []string) error     { return errors.New("up: not built yet") }
func runDown(ctx context.Context, args []string) error   { return errors.New("down: not built yet") }
func runStatus(ctx context.Context, args []string) error { return errors.New("status: not built yet") }
func runLogs(ctx context.Context, args []string) error   { return errors.New("logs: not built yet") }
func runEnv(ctx context.Context, args []string) error    { return errors.New("env: not built yet") }
