package iggytest

import (
	"testing"

	"github.com/iggy-kafka/gateway/bridge/embedded"
)

// FuzzServerFrame feeds arbitrary frames to a logged-in session (client
// a0a1.., fence 7, as in ../testdata/requests): the server may reply,
// stay silent or evict, but never panic.
func FuzzServerFrame(f *testing.F) {
	st, err := embedded.Open(f.TempDir(), embedded.Options{Sync: embedded.SyncNever, Logger: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateTopic(f.Context(), "kafka", "orders", 3); err != nil {
		f.Fatal(err)
	}
	srv := &Server{store: st, log: quiet(), opts: Options{Username: "gw", Password: "secret", ServerVersion: "x"}}
	srv.cat.init(st)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 256 {
			return
		}
		cs := &connState{srv: srv, fence: 7, clientLo: 0xa7a6a5a4a3a2a1a0, clientHi: 0xafaeadacabaaa9a8}
		out, _ := cs.handle(frame)
		if out != nil && len(out) < 256 {
			t.Fatalf("reply of %d bytes", len(out))
		}
	})
}
