package grade

import (
	"fmt"
	"strings"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/lab"
	"github.com/seckill-lab/seckill/internal/stack"
)

// CheckServers refuses a grade whose stack does not run a server the
// exercise needs (a lab made with --for another exercise): its checks
// would fail for the lab's sake, not the student's code. Run and the CLI
// call it before anything is built or restarted. The error names the
// missing servers and the fix.
func CheckServers(e exercises.Exercise, st *stack.State) error {
	need, err := lab.BackendsFor(e.Name)
	if err != nil {
		return fmt.Errorf("grade %s: %w", e.Name, err)
	}
	var missing, runs []string
	for _, b := range need {
		if !st.Has(b) {
			missing = append(missing, string(b))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	for _, b := range st.Backends {
		runs = append(runs, string(b))
	}
	return fmt.Errorf("grade %s: the stack in %s runs no %s (it runs %s): make a lab for this exercise, "+
		"`seckill lab rm NAME` then `seckill lab new NAME --for %s` (or --for %s for every exercise), "+
		"or start the stack without --backends",
		e.Name, st.Dir, strings.Join(missing, " or "), strings.Join(runs, ", "), e.Name, exercises.ForAll)
}
