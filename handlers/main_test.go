package handlers

import (
	"testing"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// TestMain stops the real Iggy server a test of this binary started
// (iggyreal.Shared), if any.
func TestMain(m *testing.M) { iggyreal.Main(m) }
