package loop

// CloseReason says why a connection closed. Every close the gateway makes
// goes through connState.close with one of these, so logs and metrics name
// it; a connection that no one closed that way was closed by its client,
// CloseClient, the zero value of connState.reason.
type CloseReason uint8

// keepOpen is what the frame path (nextFrame, answerInline, saslGate, the
// TLS handshake) returns when the connection stays open. It is not a
// reason and never reaches connState.close.
const keepOpen CloseReason = 255

const (
	CloseClient                CloseReason = iota // the client closed or the socket failed
	CloseFrameSize                                // size prefix <= 0 or over the max frame size
	CloseFrameHTTP                                // an HTTP request on the Kafka port
	CloseFrameTLS                                 // a TLS handshake on the plaintext port
	CloseBadHeader                                // request header unparseable
	CloseUnknownKey                               // API key the gateway does not serve
	CloseUnsupportedVersion                       // version outside the advertised range
	CloseDecode                                   // request body undecodable
	CloseHandler                                  // a handler returned an error (e.g. acks=0 failure)
	CloseBufferedBytes                            // unread inbound bytes over the per-connection cap
	CloseIdle                                     // no request for the idle timeout
	CloseMaxConnections                           // over the connection cap at accept
	CloseShutdown                                 // the gateway is stopping
	CloseInternal                                 // a bug: panic in a handler, encode failure
	CloseMaxConnectionsPerAddr                    // over the per-address connection cap at accept
	CloseFrameTimeout                             // a request (or the first one) took over FrameTimeout to arrive
	CloseWriteStall                               // replies over the outbound cap and the client read nothing for the write-stall timeout
	CloseSaslRequired                             // a request other than ApiVersions/SASL before authentication on a SASL listener
	CloseSaslFailed                               // the request after a failed SASL login, or a failure in bare-token framing
	CloseSaslExpired                              // a request other than re-authentication after the SASL session lifetime (KIP-368)
	CloseSaslFrameSize                            // a frame over the pre-authentication size cap
	CloseSaslLoginTimeout                         // not logged in FrameTimeout after connecting (and nothing in flight)
	CloseTLSHandshake                             // the TLS handshake failed (plaintext on a TLS port, no or a bad client certificate, TLS < 1.2)
	CloseTLSHandshakeTimeout                      // the TLS handshake did not finish within FrameTimeout of connecting
	CloseConnectionRate                           // over its IP's connection_creation_rate quota, closed after the throttle time unread
)

var closeReasonNames = [...]string{
	CloseClient:                "client",
	CloseFrameSize:             "frame_size",
	CloseFrameHTTP:             "frame_http",
	CloseFrameTLS:              "frame_tls",
	CloseBadHeader:             "bad_header",
	CloseUnknownKey:            "unknown_key",
	CloseUnsupportedVersion:    "unsupported_version",
	CloseDecode:                "decode",
	CloseHandler:               "handler",
	CloseBufferedBytes:         "buffered_bytes",
	CloseIdle:                  "idle",
	CloseMaxConnections:        "max_connections",
	CloseShutdown:              "shutdown",
	CloseInternal:              "internal",
	CloseMaxConnectionsPerAddr: "max_connections_per_addr",
	CloseFrameTimeout:          "frame_timeout",
	CloseWriteStall:            "write_stall",
	CloseSaslRequired:          "sasl_required",
	CloseSaslFailed:            "sasl_failed",
	CloseSaslExpired:           "sasl_expired",
	CloseSaslFrameSize:         "sasl_frame_size",
	CloseSaslLoginTimeout:      "sasl_login_timeout",
	CloseTLSHandshake:          "tls_handshake",
	CloseTLSHandshakeTimeout:   "tls_handshake_timeout",
	CloseConnectionRate:        "connection_rate",
}

// String is the reason's name in logs and the close metric. Any goroutine.
func (r CloseReason) String() string {
	if int(r) < len(closeReasonNames) {
		return closeReasonNames[r]
	}
	return "unknown"
}
