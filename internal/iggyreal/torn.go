package iggyreal

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A server killed while it writes a batch leaves a torn tail on the
// partition's active segment: the bytes of a batch that never completed.
// The server's own recovery (this build, apache/iggy cc269ef) skips the
// torn bytes when it counts the segment's size but then reopens the file
// at its raw length, so the next batches land after the torn bytes while
// their index entries point at where the torn bytes start; the restart
// after that refuses the partition ("message/index divergence") and the
// server does not start at all. apache/iggy carries that as a known,
// ignored test (crash_recovery_corruption.rs, "torn .log tail re-stated
// into the size counter"). Tests kill servers on purpose, many times in a
// row, so before every start the harness does what that recovery means to
// do: it cuts each segment back to its last whole batch, and its index
// back to the entries that point inside what is left. Nothing it removes
// was readable: the server's recovery skips the same bytes.

// On-disk layout of a segment (the wire's batch format): batches back to
// back from byte 0, each a 256-byte header whose u64 at 32 is the batch's
// whole length and whose bytes from 52 on are zero; the index holds 24-byte
// entries (offset, timestamp, position: u64 little-endian), position being
// where a batch starts in the log.
const (
	tornBatchHeaderLen   = 256
	tornBatchLengthAt    = 32
	tornBatchReservedAt  = 52
	tornIndexEntryLen    = 24
	tornIndexPositionAt  = 16
	tornSegmentLogSuffix = ".log"
)

var segmentLogName = regexp.MustCompile(`^[0-9]{20}\.log$`)

// TrimTornTails cuts every partition segment under dataDir back to its last
// whole batch (and its index to the entries inside it), and reports what it
// cut, one line per file. Only for a stopped server's data directory.
func TrimTornTails(dataDir string) ([]string, error) {
	var cut []string
	err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() || !segmentLogName.MatchString(d.Name()):
			return nil
		case !strings.Contains(filepath.ToSlash(path), "/partitions/"):
			return nil // the server's own logs directory holds .log files too
		}
		lines, err := trimSegment(path)
		cut = append(cut, lines...)
		return err
	})
	if os.IsNotExist(err) {
		err = nil // a first start: nothing stored yet
	}
	return cut, err
}

// trimSegment cuts one segment's log and index.
func trimSegment(logPath string) ([]string, error) {
	f, err := os.OpenFile(logPath, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	whole, err := wholeBatchesEnd(f, size)
	if err != nil {
		return nil, err
	}
	var cut []string
	if whole < size {
		if err := f.Truncate(whole); err != nil {
			return nil, err
		}
		cut = append(cut, fmt.Sprintf("%s: %d torn bytes after %d", logPath, size-whole, whole))
	}
	line, err := trimIndex(strings.TrimSuffix(logPath, tornSegmentLogSuffix)+".index", whole)
	if line != "" {
		cut = append(cut, line)
	}
	return cut, err
}

// wholeBatchesEnd walks the batch headers from byte 0 and returns where the
// last whole batch ends.
func wholeBatchesEnd(f *os.File, size int64) (int64, error) {
	var hdr [tornBatchHeaderLen]byte
	var pos int64
	for pos+tornBatchHeaderLen <= size {
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return 0, err
		}
		n := binary.LittleEndian.Uint64(hdr[tornBatchLengthAt:])
		if n < tornBatchHeaderLen || n > uint64(size-pos) || !allZero(hdr[tornBatchReservedAt:]) {
			break
		}
		pos += int64(n)
	}
	return pos, nil
}

// trimIndex drops the index's trailing entries that point at or past end
// (and a torn last entry).
func trimIndex(path string, end int64) (string, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := st.Size()
	keep := size - size%tornIndexEntryLen
	var e [tornIndexEntryLen]byte
	for keep > 0 {
		if _, err := f.ReadAt(e[:], keep-tornIndexEntryLen); err != nil {
			return "", err
		}
		if int64(binary.LittleEndian.Uint64(e[tornIndexPositionAt:])) < end {
			break
		}
		keep -= tornIndexEntryLen
	}
	if keep == size {
		return "", nil
	}
	if err := f.Truncate(keep); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %d index bytes after %d", path, size-keep, keep), nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
