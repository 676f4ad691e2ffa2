package procfs

import (
	"os"
	"testing"
)

// This process has a resident set, and a missing process is an error.
func TestRSS(t *testing.T) {
	t.Parallel()
	n, err := RSS(os.Getpid())
	if err != nil || n <= 0 {
		t.Fatalf("RSS of self: %d %v", n, err)
	}
	if _, err := RSS(1 << 30); err == nil {
		t.Fatal("RSS of a missing pid: no error")
	}
}
