package loop

import (
	"net"
	"strconv"
	"testing"

	"github.com/iggy-kafka/gateway/internal/testcert"
	"github.com/iggy-kafka/gateway/internal/tlsfiles"
)

// A listener given no advertised port advertises the port it bound, from
// its first connection on: the gnet listener and a TLS one, both on port 0.
func TestListenersAdvertiseBoundPort(t *testing.T) {
	t.Parallel()
	f := testcert.Write(t, "localhost")
	src, err := tlsfiles.Load(f.ServerCert, f.ServerKey, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := newTestServer(t, Config{Listeners: []Listener{
		{Name: "PLAINTEXT", Protocol: ProtoPlaintext, Addr: "127.0.0.1:0", AdvertisedHost: "127.0.0.1"},
		{Name: "SSL", Protocol: ProtoSSL, Addr: "127.0.0.1:0", AdvertisedHost: "127.0.0.1", TLS: src.Config},
	}})
	bound, adv := srv.ListenerAddrs(), srv.Advertised()
	ts := &tlsServer{srv: srv, plain: bound["PLAINTEXT"], tl: bound["SSL"], files: f, src: src}
	rc := mustDialTLS(t, ts, false)
	for name, c := range map[string]*rawConn{"PLAINTEXT": dialRaw(t, ts.plain), "SSL": rc} {
		_, p, _ := net.SplitHostPort(bound[name])
		if h, got := metadataBroker(t, c); h != "127.0.0.1" || strconv.Itoa(int(got)) != p || adv[name].Port != got {
			t.Fatalf("%s bound %s; Metadata names %s:%d, Advertised %+v", name, bound[name], h, got, adv[name])
		}
	}
}
