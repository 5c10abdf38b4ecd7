package main

import (
	"context"
	"os"

	"github.com/seckill-lab/seckill/internal/doctor"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runDoctor maps `seckill doctor` to doctor.Run: exit 1 when something
// the stack needs is missing.
func runDoctor(ctx context.Context, args []string) error {
	fs, dir := stackFlags("doctor")
	backendList := fs.String("backends", "", "the servers up --backends would start (default all): only their tools must be there")
	noVersions := fs.Bool("no-versions", false, "do not run each program for its version")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	backends, err := stack.ParseBackends(*backendList)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	rep, err := doctor.Run(ctx, doctor.Options{Dir: *dir, Backends: backends, NoVersions: *noVersions})
	if err != nil {
		return err
	}
	if err := rep.Write(os.Stdout); err != nil {
		return err
	}
	if !rep.OK() {
		return exitError{code: 1}
	}
	return nil
}
