package iggy

import (
	"testing"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// TestMain stops the real Iggy server the conformance tests may have
// started (internal/iggyreal).
func TestMain(m *testing.M) { iggyreal.Main(m) }
