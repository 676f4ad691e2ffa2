package handlers

import (
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/golden"
)

// wireGolden pins resp's bytes in testdata/wire/file (go test -update
// rewrites the file) and says whether they matched.
func wireGolden(t *testing.T, file string, resp kmsg.Response) bool {
	t.Helper()
	return golden.Check(t, filepath.Join("testdata", "wire", file), resp.AppendTo(nil))
}
