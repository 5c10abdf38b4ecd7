// Package gradetest owns what the grader's test packages share: a stack of
// their own for each package (the grades restart its instances, rebuild its
// binary and run fault scenarios, which the shared `make test` stack must
// not see), the options of one exercise's grade on it, and the grader's
// deadline.
package gradetest

import (
	"context"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/grade"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// Backends are the servers the exercises' grades need.
var Backends = []stack.Backend{stack.BackendRedis, stack.Backend("etcd"), stack.BackendMySQL}

// Options returns the grade of exercise name on the package's stack, from
// the checkout the test runs in.
func Options(t *testing.T, name string) grade.Options {
	t.Helper()
	e, err := exercises.Find(name)
	if err != nil {
		t.Fatal(err)
	}
	root, err := grade.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return grade.Options{Exercise: e, Dir: testenv.Get(t, config.EnvStackDir), Root: root}
}

// Ctx bounds a grade by the grader's promise: under 3 minutes for one
// exercise.
func Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
