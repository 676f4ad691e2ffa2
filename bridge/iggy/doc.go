// Package iggy is the gateway's client of Apache Iggy's binary TCP
// protocol (server 0.9.0-edge, protocol 0.11: 256-byte VSR-style headers,
// login by Register) and a bridge.Backend on top of it.
//
// The client (Dial, Client) keeps a pool of connections, each with its own
// session, because the protocol allows one request in flight per
// connection. Sends and offset writes of a partition are pinned to one
// connection so they keep their order; reads go to any idle one. A broken
// connection is redialled in the background with backoff while calls on it
// fail with bridge.ErrUnavailable.
//
// The Store (Open, Store) maps the gateway's Store calls onto Iggy
// commands; see docs/IGGY.md. Package iggytest serves the same protocol in
// process for tests.
package iggy
