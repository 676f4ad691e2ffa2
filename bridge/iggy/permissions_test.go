package iggy

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// A block written by hand from PROTOCOL.md 5.7: global read_streams and
// poll_messages; stream 7 with send_messages and topics 1 (read_topic) and
// 2 (manage_topic, send_messages); stream 9 with nothing.
const goldenPermsHex = "" +
	"00000000000100000100" + // global: read_streams (6th), poll_messages (9th)
	"01" + // has_streams
	"07000000" + "000000000001" + "01" + // stream 7: send_messages; has_topics
	"01000000" + "00010000" + "01" + // topic 1: read_topic; next
	"02000000" + "01000001" + "00" + // topic 2: manage_topic, send_messages; last
	"01" + // next stream
	"09000000" + "000000000000" + "00" + // stream 9: nothing, no topics
	"00" // last stream

func goldenPerms() Permissions {
	return Permissions{
		Global: GlobalPermissions{ReadStreams: true, PollMessages: true},
		Streams: map[uint32]StreamPermissions{
			7: {SendMessages: true, Topics: map[uint32]TopicPermissions{
				1: {ReadTopic: true},
				2: {ManageTopic: true, SendMessages: true},
			}},
			9: {},
		},
	}
}

func TestDecodePermissionsGolden(t *testing.T) {
	t.Parallel()
	b, _ := hex.DecodeString(goldenPermsHex)
	p, err := DecodePermissions(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := goldenPerms(); !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded %+v\nwant %+v", p, want)
	}
	if got := AppendPermissions(nil, &p); !bytes.Equal(got, b) {
		t.Fatalf("re-encoded %x\nwant       %x", got, b)
	}
	// Every truncation is an error, and so is a trailing byte.
	for n := 0; n < len(b); n++ {
		if _, err := DecodePermissions(b[:n]); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	if _, err := DecodePermissions(append(b[:len(b):len(b)], 0)); err == nil {
		t.Error("a trailing byte: no error")
	}
	// A non-zero bool is true, as Iggy reads it.
	b2 := bytes.Clone(b)
	b2[0] = 7
	if p, err := DecodePermissions(b2); err != nil || !p.Global.ManageServers {
		t.Errorf("bool 7: %+v, %v", p.Global, err)
	}
}

// GetUser payloads: with a block, without permissions (4 zero bytes), and
// not found (empty).
func TestDecodeUserGolden(t *testing.T) {
	t.Parallel()
	block, _ := hex.DecodeString(goldenPermsHex)
	head := func() []byte {
		b := le.AppendUint32(nil, 5)
		b = le.AppendUint64(b, 1700000000000000)
		b = append(b, 1, 4)
		b = append(b, "anna"...)
		return le.AppendUint32(b, 0) // no options
	}
	with := append(head(), 1)
	with = le.AppendUint32(with, uint32(len(block)))
	with = append(with, block...)
	u, ok, err := decodeUser(with)
	if err != nil || !ok || u.ID != 5 || u.Username != "anna" || !u.Active || u.Permissions == nil ||
		!reflect.DeepEqual(*u.Permissions, goldenPerms()) {
		t.Fatalf("with permissions: %+v ok=%v err=%v", u, ok, err)
	}
	none := append(head(), 0, 0, 0, 0)
	if u, ok, err := decodeUser(none); err != nil || !ok || u.Permissions != nil {
		t.Fatalf("without permissions: %+v ok=%v err=%v", u, ok, err)
	}
	if _, ok, err := decodeUser(nil); ok || err != nil {
		t.Fatalf("empty: ok=%v err=%v", ok, err)
	}
	for n := 1; n < len(with); n++ {
		if _, _, err := decodeUser(with[:n]); err == nil && n != len(head())+4 {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
}

// The checks against Iggy's permissioner rules (core/metadata/src/
// permissioner/permissioner_rules: messages.rs, topics.rs, streams.rs),
// one row per rule branch and per flag that must not imply another.
func TestPermissionRules(t *testing.T) {
	t.Parallel()
	type check struct {
		name string
		fn   func(p *Permissions) bool
	}
	const sid, tid = 3, 4
	checks := []check{
		{"poll", func(p *Permissions) bool { return p.MayPoll(sid, tid) }},
		{"send", func(p *Permissions) bool { return p.MaySend(sid, tid) }},
		{"readTopic", func(p *Permissions) bool { return p.MayReadTopic(sid, tid) }},
		{"listTopics", func(p *Permissions) bool { return p.MayListTopics(sid) }},
		{"createTopic", func(p *Permissions) bool { return p.MayCreateTopic(sid) }},
		{"manageTopic", func(p *Permissions) bool { return p.MayManageTopic(sid, tid) }},
		{"createStream", func(p *Permissions) bool { return p.MayCreateStream() }},
	}
	st := func(s StreamPermissions) *Permissions {
		return &Permissions{Streams: map[uint32]StreamPermissions{sid: s}}
	}
	tp := func(t TopicPermissions) *Permissions {
		return st(StreamPermissions{Topics: map[uint32]TopicPermissions{tid: t}})
	}
	// want lists the checks that allow, in the order of checks.
	for _, c := range []struct {
		name string
		p    *Permissions
		want string
	}{
		{"nil", nil, ""},
		{"none", &Permissions{}, ""},
		{"g manage_servers", &Permissions{Global: GlobalPermissions{ManageServers: true, ReadServers: true, ManageUsers: true, ReadUsers: true}}, ""},
		{"g manage_streams", &Permissions{Global: GlobalPermissions{ManageStreams: true}}, "poll send readTopic listTopics createTopic manageTopic createStream"},
		{"g read_streams", &Permissions{Global: GlobalPermissions{ReadStreams: true}}, "poll readTopic listTopics"},
		{"g manage_topics", &Permissions{Global: GlobalPermissions{ManageTopics: true}}, "poll send readTopic listTopics createTopic manageTopic"},
		{"g read_topics", &Permissions{Global: GlobalPermissions{ReadTopics: true}}, "poll readTopic listTopics"},
		{"g poll_messages", &Permissions{Global: GlobalPermissions{PollMessages: true}}, "poll"},
		{"g send_messages", &Permissions{Global: GlobalPermissions{SendMessages: true}}, "send"},
		{"s manage_stream", st(StreamPermissions{ManageStream: true}), "poll send readTopic listTopics createTopic manageTopic"},
		{"s read_stream", st(StreamPermissions{ReadStream: true}), "poll readTopic listTopics"},
		{"s manage_topics", st(StreamPermissions{ManageTopics: true}), "poll send readTopic listTopics createTopic manageTopic"},
		{"s read_topics", st(StreamPermissions{ReadTopics: true}), "poll readTopic listTopics"},
		{"s poll_messages", st(StreamPermissions{PollMessages: true}), "poll"},
		{"s send_messages", st(StreamPermissions{SendMessages: true}), "send"},
		{"s nothing", st(StreamPermissions{}), ""},
		{"t manage_topic", tp(TopicPermissions{ManageTopic: true}), "poll send readTopic manageTopic"},
		{"t read_topic", tp(TopicPermissions{ReadTopic: true}), "poll readTopic"},
		{"t poll_messages", tp(TopicPermissions{PollMessages: true}), "poll"},
		{"t send_messages", tp(TopicPermissions{SendMessages: true}), "send"},
		{"other stream manage", &Permissions{Streams: map[uint32]StreamPermissions{sid + 1: {ManageStream: true}}}, ""},
		{"other topic manage", st(StreamPermissions{Topics: map[uint32]TopicPermissions{tid + 1: {ManageTopic: true, ReadTopic: true, PollMessages: true, SendMessages: true}}}), ""},
	} {
		got := ""
		for _, k := range checks {
			if k.fn(c.p) {
				if got != "" {
					got += " "
				}
				got += k.name
			}
		}
		if got != c.want {
			t.Errorf("%s: allows %q, want %q", c.name, got, c.want)
		}
	}
}

func FuzzDecodePermissions(f *testing.F) {
	b, _ := hex.DecodeString(goldenPermsHex)
	f.Add(b)
	f.Add(make([]byte, 11))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePermissions(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to a block that decodes the same.
		again, err := DecodePermissions(AppendPermissions(nil, &p))
		if err != nil || !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip: %+v vs %+v (%v)", p, again, err)
		}
	})
}

func FuzzDecodeUser(f *testing.F) {
	f.Add([]byte{})
	f.Add(append(append(le.AppendUint32(le.AppendUint64(le.AppendUint32(nil, 1), 2), 0), 1, 1, 'x'), 0, 0, 0, 0, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) { _, _, _ = decodeUser(b) })
}

// The real server: users made with its CLI log in and read themselves
// (GetUser of their own id needs no read_users), and the permissions the
// gateway decodes are the ones the CLI set, global, per stream and per
// topic; a user without permissions reads back none.
func TestCheckLoginUserRealServer(t *testing.T) {
	t.Parallel()
	addr := iggyreal.Shared(t)
	bin, err := iggyreal.Binary("iggy")
	if err != nil {
		t.Skip("no iggy CLI:", err)
	}
	cli := func(args ...string) {
		t.Helper()
		full := append([]string{"-u", iggyreal.Username, "-p", iggyreal.Password, "--transport", "tcp", "--tcp-server-address", addr}, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, bin, full...).CombinedOutput(); err != nil {
			t.Fatalf("iggy %v: %v\n%s", args, err, out)
		}
	}
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	o := Options{Addr: addr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		name  string
		flags []string
		want  *Permissions
	}{
		{"ro", []string{"-g", "read_streams,read_topics,poll_messages"},
			&Permissions{Global: GlobalPermissions{ReadStreams: true, ReadTopics: true, PollMessages: true}}},
		{"st", []string{"-s", "4:manage_stream,r_top#1:s_msg,p_msg#2:manage_topic"},
			&Permissions{Streams: map[uint32]StreamPermissions{4: {ManageStream: true, ReadTopics: true, Topics: map[uint32]TopicPermissions{
				1: {SendMessages: true, PollMessages: true}, 2: {ManageTopic: true}}}}}},
		{"no", nil, nil},
	} {
		name := "kperm" + c.name + suffix
		cli(append(append([]string{"user", "create"}, c.flags...), name, "pw-"+name)...)
		t.Cleanup(func() { cli("user", "delete", name) })
		u, ok, err := CheckLoginUser(ctx, o, name, "pw-"+name)
		if err != nil || !ok {
			t.Fatalf("%s: ok=%v err=%v", c.name, ok, err)
		}
		if u.Username != name || !u.Active {
			t.Errorf("%s: user %+v", c.name, u)
		}
		if c.want == nil {
			if u.Permissions != nil && !reflect.DeepEqual(*u.Permissions, Permissions{}) {
				t.Errorf("%s: permissions %+v, want none", c.name, *u.Permissions)
			}
			continue
		}
		if u.Permissions == nil || !reflect.DeepEqual(*u.Permissions, *c.want) {
			t.Errorf("%s: permissions %+v, want %+v", c.name, u.Permissions, *c.want)
		}
	}
	if _, ok, err := CheckLoginUser(ctx, o, "kpermnobody"+suffix, "x"); ok || err != nil {
		t.Errorf("unknown user: ok=%v err=%v", ok, err)
	}
}
