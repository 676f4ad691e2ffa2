// Package procfs reads what the tests and the bench harness need of a
// process from /proc (Linux only).
package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS is a process's resident set (VmRSS of /proc/PID/status) in bytes.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
