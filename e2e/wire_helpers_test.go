package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wire is a raw Kafka connection for hand-built (and broken) frames.
type wire struct {
	t testing.TB
	c *net.TCPConn
}

func dialWire(t testing.TB, addr string) *wire {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &wire{t: t, c: c.(*net.TCPConn)}
}

// dialWireFrom is dialWire from local address src (any 127/8 address is
// loopback on Linux, so tests can play several client hosts).
func dialWireFrom(t testing.TB, src, addr string) (*wire, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &wire{t: t, c: c.(*net.TCPConn)}, nil
}

// frameOf encodes req at version as a full request frame (size prefix,
// header with client id "e2e", body).
func frameOf(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("e2e")).AppendRequest(nil, req, corr)
}

// rawFrame is a frame with a v1 header (key, version, correlation id,
// client id) and body, for keys kmsg does not know.
func rawFrame(key, version int16, corr int32, body []byte) []byte {
	b := make([]byte, 4, 64+len(body))
	b = kbin.AppendInt16(b, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, kmsg.StringPtr("e2e"))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (w *wire) write(b []byte) {
	w.t.Helper()
	_ = w.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.c.Write(b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame and returns its correlation id and
// the bytes after it.
func (w *wire) readFrame(timeout time.Duration) (int32, []byte, error) {
	_ = w.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(w.c, size[:]); err != nil {
		return 0, nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("response frame size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(w.c, buf); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

// response reads one response to req (sent at its version with corr) and
// decodes it. ApiVersions answers always use the v0 response header;
// other flexible answers carry a tag buffer after the correlation id.
func (w *wire) response(req kmsg.Request, corr int32) kmsg.Response {
	w.t.Helper()
	got, body, err := w.readFrame(10 * time.Second)
	if err != nil {
		w.t.Fatalf("reading the answer to %s v%d (corr %d): %v", kmsg.NameForKey(req.Key()), req.GetVersion(), corr, err)
	}
	if got != corr {
		w.t.Fatalf("answer to %s carries correlation id %d, want %d", kmsg.NameForKey(req.Key()), got, corr)
	}
	resp := req.ResponseKind()
	if req.Key() != 18 && resp.IsFlexible() {
		body, err = skipTags(body)
		if err != nil {
			w.t.Fatalf("response header tags: %v", err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		w.t.Fatalf("decoding %s v%d answer: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// roundTrip sends req at version and returns the decoded answer.
func (w *wire) roundTrip(req kmsg.Request, version int16, corr int32) kmsg.Response {
	w.t.Helper()
	w.write(frameOf(req, version, corr))
	return w.response(req, corr)
}

func skipTags(b []byte) ([]byte, error) {
	r := kbin.Reader{Src: b}
	n := r.Uvarint()
	for i := uint32(0); i < n; i++ {
		r.Uvarint()
		size := r.Uvarint()
		r.Span(int(size))
	}
	if !r.Ok() {
		return nil, kbin.ErrNotEnoughData
	}
	return r.Src, nil
}

// expectClosed fails unless the gateway closes the connection without
// answering within timeout.
func (w *wire) expectClosed(what string) {
	w.t.Helper()
	_ = w.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf [256]byte
	n, err := w.c.Read(buf[:])
	switch {
	case n > 0:
		w.t.Errorf("%s: got %d reply bytes (%x), want the connection closed", what, n, buf[:min(n, 32)])
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.t.Errorf("%s: connection still open after 5s, want it closed", what)
	case err != nil && !errClosed(err):
		w.t.Errorf("%s: read error %v, want EOF or reset", what, err)
	}
}

// served reports whether w gets an answer to an ApiVersions request (false:
// the gateway closed the connection).
func (w *wire) served() bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "e2e", "1"
	_ = w.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.c.Write(frameOf(req, 3, 1)); err != nil {
		return false
	}
	_, _, err := w.readFrame(5 * time.Second)
	return err == nil
}

// open reports whether the gateway still holds w open: a read that times
// out (nothing sent, nothing closed).
func (w *wire) open(wait time.Duration) bool {
	_ = w.c.SetReadDeadline(time.Now().Add(wait))
	var one [1]byte
	_, err := w.c.Read(one[:])
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// apiVersionsOK checks that a fresh connection gets ApiVersions answered:
// the gateway is still up and serving.
func apiVersionsOK(t testing.TB, addr string) {
	t.Helper()
	w := dialWire(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "e2e"
	req.ClientSoftwareVersion = "1"
	resp := w.roundTrip(req, 3, 4242).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions on a fresh connection: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	w.c.Close()
}

// recordBatch builds a v2 record batch of values with a correct CRC.
func recordBatch(producerID int64, attrs int16, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil)
		// AppendTo writes the length from r.Length; set it from the
		// encoded size (minus its own varint) and re-encode.
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           producerID,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		PartitionLeaderEpoch: -1,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	if producerID >= 0 {
		b.ProducerEpoch, b.FirstSequence = 0, 0
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(out[17:], crc)
	return out
}

func produceReq(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func createTopicsReq(topic string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = 1
	rt.ReplicationFactor = 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 1000
	return req
}

// headerLen is the length of the size prefix plus the request header of a
// frame made by frameOf.
func headerLen(f []byte) int {
	n := 4 + 2 + 2 + 4
	idLen := int(int16(binary.BigEndian.Uint16(f[n:])))
	n += 2
	if idLen > 0 {
		n += idLen
	}
	key, version := int16(binary.BigEndian.Uint16(f[4:])), int16(binary.BigEndian.Uint16(f[6:]))
	if r := kmsg.RequestForKey(key); r != nil {
		r.SetVersion(version)
		if r.IsFlexible() {
			n++ // the empty tag buffer
		}
	}
	return n
}
