package handlers

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// guardedGateway is newGateway over backend with the store behind the
// guard, as the command builds it (gateway/store.go).
func guardedGateway(t *testing.T, backend string, mods ...func(*Config)) *Gateway {
	t.Helper()
	var st bridge.Backend
	switch backend {
	case "embedded":
		st = openEmbedded(t, t.TempDir())
	case "iggy-server":
		stream := iggyreal.Stream(t)
		is, err := iggy.Open(context.Background(), iggy.Options{Addr: iggyreal.Shared(t), PoolSize: 2,
			CallTimeout: 10 * time.Second, StateStream: stream + ".gw", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = is.Close() })
		st = is
		mods = append(mods, func(c *Config) { c.Stream = stream })
	}
	return newGatewayOn(t, bridge.Guard(st, bridge.GuardOptions{}), mods...)
}
