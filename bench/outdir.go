package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// maxOutDirTries bounds the numeric suffixes NewOutDir tries.
const maxOutDirTries = 1000

// NewOutDir creates and returns a new report directory under parent
// (created when missing): prefix plus now with milliseconds
// (20060102-150405.000), with -2, -3, ... appended when that name exists.
// Each name is claimed with os.Mkdir, which fails when another process
// created it first, so two benches started in the same millisecond never
// share a directory.
func NewOutDir(parent, prefix string, now time.Time) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	base := filepath.Join(parent, prefix+now.Format("20060102-150405.000"))
	for i := 1; i <= maxOutDirTries; i++ {
		dir := base
		if i > 1 {
			dir += "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create report directory: %w", err)
		}
	}
	return "", fmt.Errorf("create report directory: %s and %d suffixed names exist already", base, maxOutDirTries-1)
}
