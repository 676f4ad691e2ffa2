package iggytest

import (
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// loginBody is a decoded LoginRegister or LoginRegisterWithPat body.
type loginBody struct {
	version            uint32
	username, password string
	token              string
	pat                bool
}

// parseLogin decodes a login body. The server tells the two forms apart by
// shape: username/password first, then PAT (PROTOCOL.md 3.4).
func parseLogin(b []byte) (loginBody, bool) {
	rd := wire.NewReader(b)
	l := loginBody{version: rd.U32()}
	sdk, sdkVersion := rd.Name(), rd.Name()
	if rd.Failed() || !nameOK(sdk) || !nameOK(sdkVersion) {
		return l, false
	}
	rest := rd.Rest()
	if u, p, ok := parsePasswordLogin(rest); ok {
		l.username, l.password = u, p
		return l, true
	}
	if t, ok := parsePATLogin(rest); ok {
		l.token, l.pat = t, true
		return l, true
	}
	return l, false
}

func parsePasswordLogin(b []byte) (string, string, bool) {
	rd := wire.NewReader(b)
	u, p := rd.Name(), rd.Name()
	_ = rd.Bytes32() // context
	return u, p, !rd.Failed() && rd.Len() == 0 && nameOK(u)
}

func parsePATLogin(b []byte) (string, bool) {
	rd := wire.NewReader(b)
	t := rd.Name()
	_ = rd.Bytes32()
	return t, !rd.Failed() && rd.Len() == 0 && nameOK(t)
}

// nameOK is the server's name rule: 1..255 bytes of UTF-8 (a name that is
// not UTF-8 fails to decode: status 3).
func nameOK(s string) bool { return len(s) >= 1 && len(s) <= 255 && isUTF8(s) }

// login runs the Register handshake. Failures are evictions, after which
// the connection is closed.
func (cs *connState) login(h *reqHeader, body []byte) ([]byte, bool) {
	l, ok := parseLogin(body)
	if !ok {
		cs.srv.rejected.Add(1)
		return evictionFrame(h, wire.EvictMalformedLogin), true
	}
	if !wire.VersionAccepted(l.version, wire.ProtocolVersion, wire.ProtocolVersion) {
		return evictionFrame(h, wire.EvictIncompatibleProtocol), true
	}
	o := &cs.srv.opts
	switch {
	case l.pat && (o.Token == "" || l.token != o.Token):
		return evictionFrame(h, wire.EvictInvalidToken), true
	case !l.pat && (l.username != o.Username || l.password != o.Password):
		return evictionFrame(h, wire.EvictInvalidCredentials), true
	}
	cs.fence = cs.srv.fences.Add(1)
	cs.clientLo, cs.clientHi = h.clientLo, h.clientHi
	cs.lastMeta, cs.cached = 0, nil
	p := make([]byte, 0, 32)
	p = le.AppendUint32(p, 0) // result section: success
	p = le.AppendUint32(p, 0) // root user
	p = le.AppendUint64(p, cs.fence)
	p = le.AppendUint32(p, wire.ProtocolVersion)
	p = append(p, byte(len(o.ServerVersion)))
	p = append(p, o.ServerVersion...)
	return cs.reply(h, wire.StatusOK, p), false
}
