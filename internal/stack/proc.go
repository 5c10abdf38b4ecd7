package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/supervise"
	"golang.org/x/sync/errgroup"
)

// The stack's processes are run by internal/supervise; these are the
// stack's views of it by component.

// proc is a process the stack started.
type proc = supervise.Process

func startProc(nice int, bin string, args, env []string, logPath string) (*proc, error) {
	return supervise.StartNice(nice, bin, args, env, logPath)
}

func (c Component) id() supervise.ID { return supervise.ID{Pid: c.Pid, StartTime: c.StartTime} }

// alive reports whether the component's process still runs.
func alive(c Component) bool { return supervise.Alive(c.id()) }

// stopComponent stops c and its process group (SIGTERM, then SIGKILL); a
// component already gone is not an error.
func stopComponent(c Component) error { return supervise.Stop(c.Name, c.id()) }

// stopAll stops the components concurrently (each group bounded by
// termGrace+killGrace) and joins the errors.
func stopAll(cs []Component) error {
	errs := make([]error, len(cs))
	var g errgroup.Group
	for i, c := range cs {
		g.Go(func() error { errs[i] = stopComponent(c); return nil })
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// stopServers is stopAll, except that the members of a kind whose
// description says StopInTurn stop one after the other (alongside the
// rest): a stopping leader first hands its leadership over to a connected
// peer, and when every member stops at once that handover waits for its
// timeout instead.
func stopServers(cs []Component) error {
	var members, rest []Component
	for _, c := range cs {
		if _, ks, ok := server.KindOf(c.Kind); ok && ks.StopInTurn {
			members = append(members, c)
		} else {
			rest = append(rest, c)
		}
	}
	var errM, errR error
	var g errgroup.Group
	g.Go(func() error {
		for _, c := range members {
			errM = errors.Join(errM, stopComponent(c))
		}
		return nil
	})
	g.Go(func() error { errR = stopAll(rest); return nil })
	_ = g.Wait()
	return errors.Join(errM, errR)
}

// lockDir takes an exclusive flock on DIR/lock, failing at once when
// another seckill command holds it. The returned func releases it.
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) || ctx.Err() != nil {
			f.Close()
			return nil, fmt.Errorf("another seckill command (up/down/scale) is working on %s; wait for it to finish", dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// portFree reports whether 127.0.0.1:port can be listened on.
func portFree(port int) bool {
	ln, err := netListen(port)
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// Alive reports whether c's process runs (the same pid and start time as
// recorded).
func Alive(c Component) bool { return alive(c) }
