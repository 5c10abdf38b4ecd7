// Package lab runs one lab per student on one server: `seckill lab new
// NAME` picks a port range that no other lab (nor the test suite, nor
// anything listening) uses and a run directory, starts a stack there
// (internal/stack, as `seckill up` does) and records it in a machine-wide
// registry; `seckill lab list` shows every lab with its state, memory and
// last grade, for the instructor; `seckill lab rm NAME` stops one.
//
// # Registry
//
// The registry is a directory (DefaultRegistry, or $SECKILL_LAB_REGISTRY;
// created world-writable with the sticky bit, as /tmp is, so that every
// student can add a lab and only its owner, or root, remove it):
//
//	NAME.json               one lab: name, owner, dir, base port, topology, instances, created
//	.make-test-PID.json     a running `make test`'s port shift (TestShift), gone with its process
//	.side-PID-BASE.json     a running lesson's side stack's ports (ReserveSide), gone with its process
//	.lock                   flock'ed while a lab's range is picked and recorded
//
// # Ports
//
// A lab's footprint is one block of ports, B..B+349: its stack's (every
// backend, up to 3 instances with the fault proxy or 50 without). The
// side stacks lessons 26 and 28 start beside the class's stack take free
// ports while the lesson runs (ReserveSide: stack.SideBase when free).
// Labs never share a port of their footprints, and stay off the test
// suite's ports at shift 0 (ports.Suite, where CI and a plain `make test`
// run), those of every running `make test` and every running lesson's
// side stacks.
//
// # Grades
//
// The grader (`seckill grade`) writes its last result to the stack's run
// directory (WriteGrade, DIR/grade.json); `lab list` shows it.
package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/seckill-lab/seckill/internal/ports"
	"github.com/seckill-lab/seckill/internal/stack"
)

// Registry defaults.
const (
	// DefaultRegistry is the machine-wide registry directory.
	DefaultRegistry = "/var/tmp/seckill-labs"
	// EnvRegistry overrides DefaultRegistry.
	EnvRegistry = "SECKILL_LAB_REGISTRY"
	// DirsRoot is where a lab's run directory goes by default:
	// $HOME/seckill-labs/NAME.
	DirsRoot = "seckill-labs"
)

// DefaultWindow is where New looks for a free range by default: below
// the test suite's 26000-31700 and the ephemeral ports.
var DefaultWindow = ports.Range{Lo: 10000, Hi: 25999}

// Registry is the registry directory: dir when given, else
// $SECKILL_LAB_REGISTRY, else DefaultRegistry.
func Registry(dir string) string {
	if dir != "" {
		return dir
	}
	if v := strings.TrimSpace(os.Getenv(EnvRegistry)); v != "" {
		return v
	}
	return DefaultRegistry
}

// Record is one lab in the registry.
type Record struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	Dir       string    `json:"dir"`
	BasePort  int       `json:"base_port"`
	Topology  string    `json:"topology"`
	Instances int       `json:"instances"`
	Created   time.Time `json:"created"`
}

// Footprint is the ports the lab keeps for itself.
func (r Record) Footprint() ports.Range { return Footprint(r.BasePort) }

// Footprint is the ports kept by a lab on base: one block, its stack with
// room for the fault proxy (`seckill up --proxy`, up to 3 instances) or 50
// instances (stack.SideOffset). Its lessons' side stacks take ports of
// their own while they run (ReserveSide).
func Footprint(base int) ports.Range {
	return ports.Range{Lo: base, Hi: base + stack.SideOffset - 1}
}

// nameRE is a lab's name: it becomes a file name and a directory name.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// NormalizeName turns what a student typed into a lab's name: spaces
// trimmed, letters in lower case ("Alice" is the lab alice), then checked
// (ValidName). note says what changed ("" when nothing did); an empty
// name is refused with the command that gives one.
func NormalizeName(typed string) (name, note string, err error) {
	name = strings.ToLower(strings.TrimSpace(typed))
	if name == "" {
		return "", "", errors.New(`a lab needs a name: seckill lab new "$USER" (or a name such as alice)`)
	}
	if ValidName(name) != nil {
		return "", "", ValidName(typed) // the error quotes what was typed
	}
	if name != typed {
		note = fmt.Sprintf("lab name %q is %q: lab names are lower case", typed, name)
	}
	return name, note, nil
}

// ValidName checks a lab's name.
func ValidName(name string) error {
	if !nameRE.MatchString(name) || strings.HasSuffix(name, "-") {
		return fmt.Errorf("lab name %q: use 1 to 32 lowercase letters, digits and dashes, starting with a letter and not ending with a dash (e.g. alice or team-3)", name)
	}
	return nil
}

// Owner is who runs this: $SUDO_USER (an instructor's sudo keeps the
// student's name), else $USER, else the account's name.
func Owner() string {
	for _, v := range []string{"SUDO_USER", "USER"} {
		if s := strings.TrimSpace(os.Getenv(v)); s != "" {
			return s
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "?"
}

// DefaultDir is a lab's run directory when none is given:
// $HOME/seckill-labs/NAME, or REGISTRY/NAME without a home.
func DefaultDir(registry, name string) string {
	if h, err := os.UserHomeDir(); err == nil && h != "" && h != "/" {
		return filepath.Join(h, DirsRoot, name)
	}
	return filepath.Join(registry, name)
}

// ErrNoLab: the registry has no lab of that name.
var ErrNoLab = errors.New("no such lab")

func recordPath(reg, name string) string { return filepath.Join(reg, name+".json") }

// Load reads the lab name from the registry reg.
func Load(reg, name string) (Record, error) {
	if err := ValidName(name); err != nil {
		return Record{}, err
	}
	var r Record
	b, err := os.ReadFile(recordPath(reg, name))
	if errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("lab %s: %w in %s (seckill lab list shows the labs)", name, ErrNoLab, reg)
	}
	if err != nil {
		return r, fmt.Errorf("read lab %s: %w", name, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("read lab %s: %s: %w", name, recordPath(reg, name), err)
	}
	return r, nil
}

// Records lists the registry's labs by name (none when it does not exist).
func Records(reg string) ([]Record, error) {
	es, err := os.ReadDir(reg)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the lab registry: %w", err)
	}
	var out []Record
	for _, e := range es {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") || e.IsDir() {
			continue
		}
		r, err := Load(reg, name)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// writeJSON writes v to path through a temporary file, readable by all.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ensureRegistry creates reg when missing, world-writable with the sticky
// bit (every student adds a lab; only its owner or root removes it).
func ensureRegistry(reg string) error {
	if fi, err := os.Stat(reg); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("lab registry %s is not a directory", reg)
		}
		return nil
	}
	if err := os.MkdirAll(reg, 0o755); err != nil {
		return fmt.Errorf("create the lab registry: %w", err)
	}
	if err := os.Chmod(reg, 0o777|os.ModeSticky); err != nil {
		return fmt.Errorf("create the lab registry: %w", err)
	}
	return nil
}

// lockRegistry flocks reg/.lock until the returned func is called, waiting
// at most 30 s for another `lab new` or `make test` to finish picking.
func lockRegistry(reg string) (func(), error) {
	path := filepath.Join(reg, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the lab registry: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock the lab registry %s: %v (another `seckill lab new` is picking ports; try again)", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
