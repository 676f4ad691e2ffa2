package iggy

import (
	"context"
	"fmt"
	"slices"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Iggy's user permissions (PROTOCOL.md 5.7, 6.14) and the rules by which
// Iggy's server combines them (its permissioner: global flags, then the
// stream's, then the topic's). The gateway reads a user's permissions to
// decide, beside its Kafka ACLs, what a client logged in as that user may
// do (docs/SECURITY.md, "ACLs and Iggy permissions").

// Permissions is a user's permission set. The zero value (and a nil
// *Permissions) allows nothing, as a user without permissions in Iggy.
type Permissions struct {
	Global  GlobalPermissions
	Streams map[uint32]StreamPermissions // by Iggy stream id
}

// GlobalPermissions are the ten server-wide flags, in wire order.
type GlobalPermissions struct {
	ManageServers, ReadServers, ManageUsers, ReadUsers, ManageStreams,
	ReadStreams, ManageTopics, ReadTopics, PollMessages, SendMessages bool
}

// StreamPermissions are the flags of one stream and of its topics.
type StreamPermissions struct {
	ManageStream, ReadStream, ManageTopics, ReadTopics, PollMessages, SendMessages bool
	Topics                                                                         map[uint32]TopicPermissions // by Iggy topic id
}

// TopicPermissions are the flags of one topic.
type TopicPermissions struct {
	ManageTopic, ReadTopic, PollMessages, SendMessages bool
}

// User is a GetUser record.
type User struct {
	ID        uint32
	CreatedAt uint64
	Active    bool // status 1; 2 is inactive
	Username  string
	// Permissions is nil when the user has none.
	Permissions *Permissions
}

// maxPermEntries bounds the streams plus topics one block may name, so a
// corrupt or hostile block cannot make the decoder build maps without
// end. Each entry takes at least 9 bytes and frames are bounded anyway;
// this keeps the bound explicit.
const maxPermEntries = 1 << 16

// decodeUser decodes a GetUser payload (PROTOCOL.md 6.14); ok=false for the
// empty payload Iggy sends for an unknown user. Any goroutine.
func decodeUser(b []byte) (u User, ok bool, err error) {
	if len(b) == 0 {
		return User{}, false, nil
	}
	rd := wire.NewReader(b)
	u.ID, u.CreatedAt = rd.U32(), rd.U64()
	u.Active = rd.U8() == 1
	u.Username = rd.Name()
	_ = rd.Bytes32() // options
	if rd.Failed() {
		return User{}, false, short("user")
	}
	// Either u8 1, u32 len, block; or 4 zero bytes.
	rest := rd.Rest()
	if len(rest) == 4 && rest[0]|rest[1]|rest[2]|rest[3] == 0 {
		return u, true, nil
	}
	rd = wire.NewReader(rest)
	if rd.U8() != 1 {
		return User{}, false, fmt.Errorf("%w: user permissions flag", ErrProtocol)
	}
	block := rd.Bytes32()
	if rd.Failed() || rd.Len() != 0 {
		return User{}, false, short("user permissions")
	}
	p, err := DecodePermissions(block)
	if err != nil {
		return User{}, false, err
	}
	u.Permissions = &p
	return u, true, nil
}

// DecodePermissions decodes a permissions block (PROTOCOL.md 5.7). A bool
// is true when non-zero, as Iggy reads it; a stream or topic named twice
// keeps its last entry, as Iggy's map does. Trailing bytes are an error.
// Any goroutine.
func DecodePermissions(b []byte) (Permissions, error) {
	rd := wire.NewReader(b)
	flag := func() bool { return rd.U8() != 0 }
	var p Permissions
	g := &p.Global
	g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams = flag(), flag(), flag(), flag(), flag()
	g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages = flag(), flag(), flag(), flag(), flag()
	entries := 0
	for more := flag(); more && !rd.Failed(); more = flag() {
		if entries++; entries > maxPermEntries {
			return Permissions{}, fmt.Errorf("%w: over %d permission entries", ErrProtocol, maxPermEntries)
		}
		id := rd.U32()
		var s StreamPermissions
		s.ManageStream, s.ReadStream, s.ManageTopics = flag(), flag(), flag()
		s.ReadTopics, s.PollMessages, s.SendMessages = flag(), flag(), flag()
		for moreT := flag(); moreT && !rd.Failed(); moreT = flag() {
			if entries++; entries > maxPermEntries {
				return Permissions{}, fmt.Errorf("%w: over %d permission entries", ErrProtocol, maxPermEntries)
			}
			tid := rd.U32()
			t := TopicPermissions{ManageTopic: flag(), ReadTopic: flag(), PollMessages: flag(), SendMessages: flag()}
			if s.Topics == nil {
				s.Topics = make(map[uint32]TopicPermissions)
			}
			s.Topics[tid] = t
		}
		if p.Streams == nil {
			p.Streams = make(map[uint32]StreamPermissions)
		}
		p.Streams[id] = s
	}
	if rd.Failed() {
		return Permissions{}, short("permissions")
	}
	if rd.Len() != 0 {
		return Permissions{}, fmt.Errorf("%w: %d bytes after the permissions block", ErrProtocol, rd.Len())
	}
	return p, nil
}

// AppendPermissions encodes p as a permissions block (streams and topics in
// ascending id order, so the bytes are deterministic). For tests and the
// imitation server.
func AppendPermissions(dst []byte, p *Permissions) []byte {
	b := func(v bool) byte {
		if v {
			return 1
		}
		return 0
	}
	g := &p.Global
	dst = append(dst, b(g.ManageServers), b(g.ReadServers), b(g.ManageUsers), b(g.ReadUsers), b(g.ManageStreams),
		b(g.ReadStreams), b(g.ManageTopics), b(g.ReadTopics), b(g.PollMessages), b(g.SendMessages))
	sids := sortedIDs(p.Streams)
	dst = append(dst, b(len(sids) > 0))
	for i, sid := range sids {
		s := p.Streams[sid]
		dst = le.AppendUint32(dst, sid)
		dst = append(dst, b(s.ManageStream), b(s.ReadStream), b(s.ManageTopics), b(s.ReadTopics), b(s.PollMessages), b(s.SendMessages))
		tids := sortedIDs(s.Topics)
		dst = append(dst, b(len(tids) > 0))
		for j, tid := range tids {
			t := s.Topics[tid]
			dst = le.AppendUint32(dst, tid)
			dst = append(dst, b(t.ManageTopic), b(t.ReadTopic), b(t.PollMessages), b(t.SendMessages), b(j < len(tids)-1))
		}
		dst = append(dst, b(i < len(sids)-1))
	}
	return dst
}

func sortedIDs[V any](m map[uint32]V) []uint32 {
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// The checks below are Iggy's permissioner rules, one per kind of request
// the gateway makes for a client; stream and topic are Iggy's numeric ids.
// A nil receiver allows nothing. Any goroutine; p must not change.

func (p *Permissions) stream(sid uint32) (StreamPermissions, bool) {
	s, ok := p.Streams[sid]
	return s, ok
}

// topic is what is granted on the topic itself; ok=false when nothing is
// (a nil p included).
func (p *Permissions) topic(sid, tid uint32) (TopicPermissions, bool) {
	if p == nil {
		return TopicPermissions{}, false
	}
	s, ok := p.stream(sid)
	if !ok {
		return TopicPermissions{}, false
	}
	t, ok := s.Topics[tid]
	return t, ok
}

// MayPoll: poll_messages (global, stream or topic), or what implies it
// (read/manage topics or streams at the global or stream level, read or
// manage of the topic).
func (p *Permissions) MayPoll(sid, tid uint32) bool {
	if p == nil {
		return false
	}
	g := &p.Global
	if g.PollMessages || g.ReadTopics || g.ManageTopics || g.ReadStreams || g.ManageStreams {
		return true
	}
	s, ok := p.stream(sid)
	if !ok {
		return false
	}
	if s.PollMessages || s.ManageStream || s.ReadStream || s.ManageTopics || s.ReadTopics {
		return true
	}
	t, ok := s.Topics[tid]
	return ok && (t.ManageTopic || t.ReadTopic || t.PollMessages)
}

// MaySend: send_messages (global, stream or topic), or manage of streams
// or topics (global or stream level) or of the topic. Reading implies no
// sending.
func (p *Permissions) MaySend(sid, tid uint32) bool {
	if p == nil {
		return false
	}
	g := &p.Global
	if g.SendMessages || g.ManageStreams || g.ManageTopics {
		return true
	}
	s, ok := p.stream(sid)
	if !ok {
		return false
	}
	if s.SendMessages || s.ManageStream || s.ManageTopics {
		return true
	}
	t, ok := s.Topics[tid]
	return ok && (t.ManageTopic || t.SendMessages)
}

// MayReadTopic is GetTopic: read or manage of streams or topics (global or
// stream level), or read or manage of the topic. poll_messages alone does
// not let a user see the topic.
func (p *Permissions) MayReadTopic(sid, tid uint32) bool {
	if p.MayListTopics(sid) {
		return true
	}
	t, ok := p.topic(sid, tid)
	return ok && (t.ManageTopic || t.ReadTopic)
}

// MayListTopics is GetTopics/GetStream of a stream: read or manage of
// streams or topics, global or on that stream (topic flags do not count).
func (p *Permissions) MayListTopics(sid uint32) bool {
	if p == nil {
		return false
	}
	g := &p.Global
	if g.ReadStreams || g.ManageStreams || g.ManageTopics || g.ReadTopics {
		return true
	}
	s, ok := p.stream(sid)
	return ok && (s.ManageStream || s.ReadStream || s.ManageTopics || s.ReadTopics)
}

// MayCreateTopic: manage_streams or manage_topics, global or on the stream.
func (p *Permissions) MayCreateTopic(sid uint32) bool {
	if p == nil {
		return false
	}
	if p.Global.ManageStreams || p.Global.ManageTopics {
		return true
	}
	s, ok := p.stream(sid)
	return ok && (s.ManageStream || s.ManageTopics)
}

// MayManageTopic is update, delete and purge of a topic (and its
// partitions): MayCreateTopic on the stream, or manage_topic of the topic.
func (p *Permissions) MayManageTopic(sid, tid uint32) bool {
	if p.MayCreateTopic(sid) {
		return true
	}
	t, ok := p.topic(sid, tid)
	return ok && t.ManageTopic
}

// MayCreateStream: global manage_streams only.
func (p *Permissions) MayCreateStream() bool { return p != nil && p.Global.ManageStreams }

// GetUser reads a user (by id or name) on one pooled connection, as the
// client's own Iggy user; ok=false when Iggy has no such user. Iggy lets a
// user read itself without read_users; anyone else needs read_users or
// manage_users (else ErrUnauthorized). Any goroutine.
func (c *Client) GetUser(ctx context.Context, user Identifier) (u User, ok bool, err error) {
	if !user.valid() {
		return User{}, false, ErrNameLength
	}
	err = c.nr(ctx, "get user", wire.CodeGetUser,
		func(b []byte) []byte { return appendIdentifier(b, user) },
		func(p []byte) error {
			u, ok, err = decodeUser(p)
			return err
		})
	return u, ok, err
}
