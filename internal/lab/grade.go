package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// GradeFile is the grade's file in a stack's run directory.
const GradeFile = "grade.json"

// Grade is the last result of `seckill grade` on a lab: the exercise, how
// many of its checks passed and failed, whether it passed as a whole, and
// when.
type Grade struct {
	Exercise string    `json:"exercise"`
	Passed   int       `json:"passed"`
	Failed   int       `json:"failed"`
	OK       bool      `json:"ok"`
	At       time.Time `json:"at"`
}

// String is the grade as `lab list` shows it: "redislock 7/9 fail".
func (g Grade) String() string {
	verdict := "fail"
	if g.OK {
		verdict = "ok"
	}
	return fmt.Sprintf("%s %d/%d %s", g.Exercise, g.Passed, g.Passed+g.Failed, verdict)
}

// WriteGrade records g as the last grade of the stack in dir
// (dir/grade.json), replacing the one before.
func WriteGrade(dir string, g Grade) error {
	if g.Exercise == "" {
		return errors.New("write grade: no exercise named")
	}
	if g.Passed < 0 || g.Failed < 0 {
		return fmt.Errorf("write grade: %d passed, %d failed: counts cannot be negative", g.Passed, g.Failed)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("write grade: run directory %s does not exist (start the stack first)", dir)
	}
	return writeJSON(filepath.Join(dir, GradeFile), g)
}

// ReadGrade reads the last grade of the stack in dir; ok is false when it
// was never graded.
func ReadGrade(dir string) (g Grade, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, GradeFile))
	if errors.Is(err, os.ErrNotExist) {
		return g, false, nil
	}
	if err != nil {
		return g, false, fmt.Errorf("read grade: %w", err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return g, false, fmt.Errorf("read grade %s: %w", filepath.Join(dir, GradeFile), err)
	}
	return g, true, nil
}
