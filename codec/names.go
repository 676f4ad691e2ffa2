package codec

// MaxTopicNameLen is Kafka's limit (Topic.MAX_NAME_LENGTH).
const MaxTopicNameLen = 249

// ValidTopicName reports whether name is a legal Kafka topic name: 1 to 249
// bytes of [A-Za-z0-9._-], and not "." or "..". Any goroutine; no allocation.
func ValidTopicName(name string) bool {
	if len(name) == 0 || len(name) > MaxTopicNameLen || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
