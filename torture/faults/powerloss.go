package faults

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// aofDir is the directory, inside a node's directory, where Redis 7 keeps
// its multi-part append-only file (the appenddirname default).
const aofDir = "appendonlydir"

// aofCopy is where a node's append-only files are copied to, beside the
// live ones, so that a power loss can put them back.
const aofCopy = "appendonlydir.on-disk"

// copyAOF copies the append-only files of the node in dir aside: they
// stand for what has reached the disk. A command that Redis is appending
// while the copy is made may be cut short; Redis loads such a file with
// aof-load-truncated, its default, as it would after a real power loss.
func copyAOF(dir string) error {
	dst := filepath.Join(dir, aofCopy)
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	return copyDir(filepath.Join(dir, aofDir), dst)
}

// restoreAOF replaces the append-only files of the stopped node in dir with
// the copy copyAOF made, losing every write appended since, as a power loss
// loses what the operating system had not yet written to the disk.
func restoreAOF(dir string) error {
	live := filepath.Join(dir, aofDir)
	if err := os.RemoveAll(live); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	return copyDir(filepath.Join(dir, aofCopy), live)
}

// copyDir copies the regular files of directory src into a new directory
// dst; Redis's append-only directory has no subdirectories.
func copyDir(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeType != 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return fmt.Errorf("faults: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return fmt.Errorf("faults: %w", err)
		}
	}
	return nil
}
