package iggy

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// frame builds a whole request as the client does: header stamped by the
// session, then the body.
func frame(s *session, op uint8, code uint32, body []byte) []byte {
	b := make([]byte, wire.HeaderSize, wire.HeaderSize+len(body))
	b = append(b, body...)
	putReqHeader(b, s.header(op, code, len(body)))
	return b
}

// request is one command as the client encodes it.
type request struct {
	op   uint8
	code uint32
	body []byte
}

func u32p(v uint32) *uint32 { return &v }

// fixtureBatch is the one-message batch of testdata/requests/08.
func fixtureBatch(t *testing.T) []byte {
	b := readHexFixture(t, "testdata/requests/08_send_messages.hex")
	return b[wire.HeaderSize+29:]
}

// TestRequestFixtures replays the session of testdata/requests (written
// by hand from PROTOCOL.md) and compares every frame byte for byte.
func TestRequestFixtures(t *testing.T) {
	t.Parallel()
	kafka, orders := Name("kafka"), Name("orders")
	group := PlainConsumer(Name("gw-group"))
	ref := &OffsetRef{Consumer: group, Stream: kafka, Topic: orders, Partition: u32p(2)}
	send := func() []byte {
		batch := fixtureBatch(t)
		return append(appendSendPrefix(nil, kafka, orders, PartitionID(2), 1), batch...)
	}
	reqs := map[string]func() request{
		"01_ping": func() request { return request{wire.OpNonReplicated, wire.CodePing, nil} },
		"02_login_register": func() request {
			return request{wire.OpRegister, 0, appendLoginRegister(nil, sdkName, sdkVersion, "gw", "secret")}
		},
		"03_create_stream": func() request { return request{wire.OpCreateStream, 0, appendCreateStream(nil, "kafka")} },
		"04_create_topic":  func() request { return request{wire.OpCreateTopic, 0, appendCreateTopic(nil, kafka, 3, "orders")} },
		"05_get_stream":    func() request { return request{wire.OpNonReplicated, wire.CodeGetStream, appendIdentifier(nil, kafka)} },
		"06_get_topic": func() request {
			return request{wire.OpNonReplicated, wire.CodeGetTopic, appendTopicRef(nil, kafka, orders)}
		},
		"07_get_topics":    func() request { return request{wire.OpNonReplicated, wire.CodeGetTopics, appendIdentifier(nil, kafka)} },
		"08_send_messages": func() request { return request{wire.OpSendMessages, 0, send()} },
		"09_poll_offset": func() request {
			return request{wire.OpNonReplicated, wire.CodePollMessages, appendPoll(nil, &PollRequest{
				Consumer: pollConsumer, Stream: kafka, Topic: orders, Partition: u32p(2),
				Strategy: PollingStrategy{PollOffset, 5}, Count: 100})}
		},
		"10_poll_timestamp": func() request {
			return request{wire.OpNonReplicated, wire.CodePollMessages, appendPoll(nil, &PollRequest{
				Consumer: pollConsumer, Stream: kafka, Topic: orders, Partition: u32p(0),
				Strategy: PollingStrategy{PollTimestamp, 1700000000000000}, Count: 1})}
		},
		"11_get_consumer_offset": func() request {
			return request{wire.OpNonReplicated, wire.CodeGetConsumerOffset, appendOffsetRef(nil, ref)}
		},
		"12_store_consumer_offset":  func() request { return request{wire.OpStoreConsumerOffset, 0, appendStoreOffset(nil, ref, 9)} },
		"13_delete_consumer_offset": func() request { return request{wire.OpDeleteConsumerOffset, 0, appendDeleteOffset(nil, ref)} },
		"14_delete_topic":           func() request { return request{wire.OpDeleteTopic, 0, appendTopicRef(nil, kafka, orders)} },
		"15_logout":                 func() request { return request{wire.OpLogout, 0, nil} },
		"16_create_topic_options": func() request {
			block, err := AppendTopicOptions(nil, []TopicOption{OptBool(OptEnforceFsync, true), OptUint32(OptMessagesRequiredToSave, 1)})
			if err != nil {
				t.Fatal(err)
			}
			return request{wire.OpCreateTopic, 0, append(appendCreateTopic(nil, kafka, 1, "audit"), block...)}
		},
		"17_update_topic": func() request {
			block, err := AppendTopicOptions(nil, []TopicOption{OptString(OptMessageExpiry, "7 days")})
			if err != nil {
				t.Fatal(err)
			}
			return request{wire.OpUpdateTopic, 0, append(appendName(appendTopicRef(nil, kafka, orders), "orders-v2"), block...)}
		},
	}
	s := &session{clientLo: 0xa7a6a5a4a3a2a1a0, clientHi: 0xafaeadacabaaa9a8, next: 1}
	for _, path := range fixtureFiles(t, "requests") {
		name := filepath.Base(path)
		name = name[:len(name)-len(".hex")]
		build, ok := reqs[name]
		if !ok {
			t.Fatalf("fixture %s has no builder", name)
		}
		r := build()
		got := frame(s, r.op, r.code, r.body)
		if r.op == wire.OpRegister {
			s.bind(7)
		}
		if want := readHexFixture(t, path); !bytes.Equal(got, want) {
			t.Errorf("%s: %s", name, diffBytes(got, want))
		}
	}
}

// TestRequestVectors walks the official SDK's vectors in file order with
// one session, as they were made (PROTOCOL.md 17): every command the client
// speaks must match byte for byte, and the others must still move the
// request counter as their operation says.
func TestRequestVectors(t *testing.T) {
	t.Parallel()
	vs := loadVectors(t)
	orders, events := Name("orders"), Name("events")
	c1 := PlainConsumer(ID(1))
	ref := &OffsetRef{Consumer: c1, Stream: orders, Topic: events, Partition: u32p(1)}
	batchOf := func(name string, prefix int) []byte { return mustHex(t, vs[name].BodyHex)[prefix:] }
	builders := map[string]func() request{
		"ping_before_login": func() request { return request{wire.OpNonReplicated, wire.CodePing, nil} },
		"login_register_iggy_iggy": func() request {
			return request{wire.OpRegister, 0, appendLoginRegister(nil, "go-sdk", "0.9.0-edge.4", "iggy", "iggy")}
		},
		"ping_after_login":     func() request { return request{wire.OpNonReplicated, wire.CodePing, nil} },
		"create_stream_orders": func() request { return request{wire.OpCreateStream, 0, appendCreateStream(nil, "orders")} },
		"create_topic_events_3_partitions": func() request {
			return request{wire.OpCreateTopic, 0, appendCreateTopic(nil, orders, 3, "events")}
		},
		"get_stream_orders": func() request {
			return request{wire.OpNonReplicated, wire.CodeGetStream, appendIdentifier(nil, orders)}
		},
		"get_topics_orders": func() request {
			return request{wire.OpNonReplicated, wire.CodeGetTopics, appendIdentifier(nil, orders)}
		},
		"get_topic_orders_events": func() request {
			return request{wire.OpNonReplicated, wire.CodeGetTopic, appendTopicRef(nil, orders, events)}
		},
		"get_topic_numeric_0_0": func() request {
			return request{wire.OpNonReplicated, wire.CodeGetTopic, appendTopicRef(nil, ID(0), ID(0))}
		},
		"create_partitions_2": func() request { return request{wire.OpCreatePartitions, 0, appendPartitions(nil, orders, events, 2)} },
		"delete_partitions_2": func() request { return request{wire.OpDeletePartitions, 0, appendPartitions(nil, orders, events, 2)} },
		"send_messages_partition_0": func() request {
			b := appendSendPrefix(nil, orders, events, PartitionID(0), 3)
			return request{wire.OpSendMessages, 0, append(b, batchOf("send_messages_partition_0", len(b))...)}
		},
		"send_messages_balanced": func() request {
			b := appendSendPrefix(nil, orders, events, Balanced(), 3)
			return request{wire.OpSendMessages, 0, append(b, batchOf("send_messages_balanced", len(b))...)}
		},
		"send_messages_messages_key": func() request {
			b := appendSendPrefix(nil, orders, events, MessagesKey([]byte("user-42")), 3)
			return request{wire.OpSendMessages, 0, append(b, batchOf("send_messages_messages_key", len(b))...)}
		},
		"send_messages_rust_parity_stream1_topic2_balanced": func() request {
			b := appendSendPrefix(nil, ID(1), ID(2), Balanced(), 2)
			return request{wire.OpSendMessages, 0, append(b, batchOf("send_messages_rust_parity_stream1_topic2_balanced", len(b))...)}
		},
		"poll_messages_consumer1_partition1_offset0": func() request {
			return request{wire.OpNonReplicated, wire.CodePollMessages, appendPoll(nil, &PollRequest{
				Consumer: c1, Stream: orders, Topic: events, Partition: u32p(1), Strategy: PollingStrategy{PollOffset, 0}, Count: 10})}
		},
		"poll_messages_next_autocommit_no_partition": func() request {
			return request{wire.OpNonReplicated, wire.CodePollMessages, appendPoll(nil, &PollRequest{
				Consumer: c1, Stream: orders, Topic: events, Strategy: PollingStrategy{Kind: PollNext}, Count: 100, AutoCommit: true})}
		},
		"poll_messages_group_gateway_partition0_next": func() request {
			return request{wire.OpNonReplicated, wire.CodePollMessages, appendPoll(nil, &PollRequest{
				Consumer: GroupConsumer(Name("gateway")), Stream: orders, Topic: events, Partition: u32p(0),
				Strategy: PollingStrategy{Kind: PollNext}, Count: 10, AutoCommit: true})}
		},
		"store_consumer_offset_consumer1_partition1_offset2": func() request {
			return request{wire.OpStoreConsumerOffset, 0, appendStoreOffset(nil, ref, 2)}
		},
		"get_consumer_offset_consumer1_partition1": func() request {
			return request{wire.OpNonReplicated, wire.CodeGetConsumerOffset, appendOffsetRef(nil, ref)}
		},
		"delete_consumer_offset_consumer1_partition1": func() request {
			return request{wire.OpDeleteConsumerOffset, 0, appendDeleteOffset(nil, ref)}
		},
		"create_topic_with_options": func() request {
			block, err := AppendTopicOptions(nil, []TopicOption{OptString(OptCompression, "gzip"),
				OptUint64(OptMessageExpiry, 3_600_000_000), OptUint64(OptMaxTopicSize, 1<<30)})
			if err != nil {
				t.Fatal(err)
			}
			return request{wire.OpCreateTopic, 0, append(appendCreateTopic(nil, orders, 1, "audit"), block...)}
		},
		"update_topic_rename": func() request {
			return request{wire.OpUpdateTopic, 0, appendName(appendTopicRef(nil, orders, events), "events-v2")}
		},
		"delete_topic":  func() request { return request{wire.OpDeleteTopic, 0, appendTopicRef(nil, orders, events)} },
		"delete_stream": func() request { return request{wire.OpDeleteStream, 0, appendIdentifier(nil, orders)} },
		"logout":        func() request { return request{wire.OpLogout, 0, nil} },
	}
	order := vectorOrder(t)
	s := &session{clientLo: 0x0807060504030201, clientHi: 0x100f0e0d0c0b0a09, next: 1}
	matched := 0
	for _, name := range order {
		v := vs[name]
		if v.Kind != "request" || name == "login_register_with_pat" {
			continue
		}
		build, ok := builders[name]
		if !ok {
			s.stamp(v.Header.Operation) // a command the client does not speak
			continue
		}
		r := build()
		got := frame(s, r.op, r.code, r.body)
		if r.op == wire.OpRegister {
			s.bind(1)
		}
		if want := mustHex(t, v.Hex); !bytes.Equal(got, want) {
			t.Errorf("%s: %s", name, diffBytes(got, want))
		}
		matched++
	}
	if matched != len(builders) {
		t.Errorf("matched %d vectors, have %d builders", matched, len(builders))
	}
	// The PAT login was made on its own connection.
	v := vs["login_register_with_pat"]
	lo, _ := strconv.ParseUint(v.Header.ClientLo[2:], 16, 64)
	hi, _ := strconv.ParseUint(v.Header.ClientHi[2:], 16, 64)
	ps := &session{clientLo: lo, clientHi: hi, next: 1}
	got := frame(ps, wire.OpRegister, 0, appendLoginRegisterWithPAT(nil, "go-sdk", "0.9.0-edge.4", "0123456789abcdef0123456789abcdef"))
	if want := mustHex(t, v.Hex); !bytes.Equal(got, want) {
		t.Errorf("login_register_with_pat: %s", diffBytes(got, want))
	}
}

// vectorOrder returns vector names in file order.
func vectorOrder(t *testing.T) []string {
	t.Helper()
	var vs []vector
	readJSON(t, vectorsPath, &vs)
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return names
}
