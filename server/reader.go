package server

import (
	"bytes"

	"github.com/sluice-rl/sluice/internal/parse"
)

// ReaderLimits bound what one client can make the server hold. The defaults
// are tighter than Redis's because sluice stores no values: a key and a few
// short numbers are all a command carries.
type ReaderLimits struct {
	// MaxBulk is the longest bulk argument accepted (proto-max-bulk-len).
	MaxBulk int64
	// MaxArgs is the most arguments one command may have.
	MaxArgs int64
	// MaxInline is the longest inline (telnet) command line.
	MaxInline int
}

// Redis's bounds on count lines and on clients that have not authenticated.
const (
	maxCountLine  = 64 * 1024 // Redis's PROTO_INLINE_MAX_SIZE
	unauthMaxArgs = 10        // Redis's limits for clients that have not authenticated
	unauthMaxBulk = 16 * 1024
)

// readCommand parses one command from the start of buf. It returns the
// command's arguments (appended to args[:0]; multibulk arguments point into
// buf, inline ones into *scratch), and the number of bytes the command took.
// used is 0 and err nil when buf does not hold a whole command yet. A frame
// that is not a command (an empty line, "*0", "*-1") is consumed and yields
// no arguments. unauth applies Redis's stricter limits for clients that have
// not authenticated yet.
//
// readCommand never allocates more than the arguments it returns and never
// reads a bulk body it was not given: a length is checked against the
// limits before any of its bytes are awaited.
func readCommand(buf []byte, args [][]byte, scratch *[]byte, lim *ReaderLimits, unauth bool) (out [][]byte, used int, err error) {
	return readCommandFrom(buf, args, scratch, lim, unauth, nil)
}

// readState carries a multibulk command that has not fully arrived from one
// read to the next, so that it is parsed once rather than once per read: a
// client trickling in a command of a million arguments would otherwise cost
// a full parse for every few bytes it sends.
type readState struct {
	count int64 // the carried command's argument count; 0: nothing carried
	pos   int   // bytes of the command parsed so far: its header and whole arguments
	offs  []int // start and end of each parsed argument, from the command's start (set by carry)
	moved bool  // the bytes moved since (the caller compacted or grew its buffer)
}

func (st *readState) reset() {
	st.count, st.pos, st.moved = 0, 0, false
	st.offs = st.offs[:0]
}

// readCommandFrom is readCommand resuming the unfinished command st carries
// (when st is not nil). Between calls the caller passes back the args it was
// given, and sets st.moved if the command's bytes moved in memory.
func readCommandFrom(buf []byte, args [][]byte, scratch *[]byte, lim *ReaderLimits, unauth bool, st *readState) (out [][]byte, used int, err error) {
	var count int64
	var pos int
	switch {
	case st != nil && st.count > 0:
		count, pos = st.count, st.pos
		k := len(st.offs) / 2
		if st.moved || len(args) != k {
			args = args[:0]
			for i := 0; i < len(st.offs); i += 2 {
				args = append(args, buf[st.offs[i]:st.offs[i+1]:st.offs[i+1]])
			}
			st.moved = false
		}
	case len(buf) == 0:
		return args[:0], 0, nil
	case buf[0] != '*':
		return readInline(buf, args[:0], scratch, lim)
	default:
		args = args[:0]
		if count, pos, err = readHeader(buf, lim, unauth); err != nil || pos == 0 || count <= 0 {
			return args, pos, err // count <= 0: Redis ignores empty and negative multibulk frames
		}
	}
	for i := int64(len(args)); i < count; i++ {
		if pos >= len(buf) {
			return args, 0, st.carry(buf, len(args), count, pos)
		}
		if buf[pos] != '$' {
			return args, 0, st.fail(errProtoExpectedDollar(buf[pos]))
		}
		n, next, err := readCountLine(buf, pos+1, errProtoBigBulkCount)
		if err != nil {
			return args, 0, st.fail(err)
		}
		if next == 0 {
			return args, 0, st.carry(buf, len(args), count, pos)
		}
		if !countOK(n) || n < 0 || n > lim.MaxBulk {
			return args, 0, st.fail(errProtoBulkLen)
		}
		if unauth && n > unauthMaxBulk {
			return args, 0, st.fail(errProtoUnauthBulk)
		}
		if int64(len(buf)-next) < n+2 {
			return args, 0, st.carry(buf, len(args), count, pos) // body not here yet
		}
		end := next + int(n)
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return args, 0, st.fail(errProtoBulkLen)
		}
		args = append(args, buf[next:end:end])
		pos = end + 2
	}
	if st != nil {
		st.reset()
	}
	return args, pos, nil
}

// readHeader reads "*<count>\r\n" and checks count against the limits.
// pos is 0 while the line is incomplete.
func readHeader(buf []byte, lim *ReaderLimits, unauth bool) (count int64, pos int, err error) {
	count, pos, err = readCountLine(buf, 1, errProtoBigMbulkCount)
	switch {
	case err != nil || pos == 0:
		return 0, 0, err
	case !countOK(count):
		return 0, 0, errProtoMultibulkLen
	case unauth && count > unauthMaxArgs:
		return 0, 0, errProtoUnauthMbulk
	case count > lim.MaxArgs:
		return 0, 0, errProtoMultibulkLen
	}
	return count, pos, nil
}

// carry remembers an unfinished command (st may be nil: nothing to carry):
// its count, how far it was parsed, and where its first nargs arguments lie
// in buf, which starts with the command. The offsets are found again here,
// by walking the lines already checked, rather than recorded for every
// argument of every command: only a command split across reads needs them.
func (st *readState) carry(buf []byte, nargs int, count int64, pos int) error {
	if st == nil {
		return nil
	}
	st.count, st.pos = count, pos
	st.offs = st.offs[:0]
	_, p, _ := readCountLine(buf, 1, errProtoBigMbulkCount)
	for i := 0; i < nargs; i++ {
		n, next, _ := readCountLine(buf, p+1, errProtoBigBulkCount)
		end := next + int(n)
		st.offs = append(st.offs, next, end)
		p = end + 2
	}
	return nil
}

// fail forgets any carried command and returns err.
func (st *readState) fail(err error) error {
	if st != nil {
		st.reset()
	}
	return err
}

// countOK reports whether a parsed count fits Redis's range for lengths.
func countOK(n int64) bool { return n <= 1<<31-1 }

// readCountLine reads the integer that starts at buf[from] and ends with
// "\r\n". It returns the value and the position after the line, or pos 0 if
// the line is not complete. An integer that is not valid reads as a value
// out of every range, as Redis's string2ll failure does.
func readCountLine(buf []byte, from int, tooBig replyError) (v int64, pos int, err error) {
	// The common case, a short canonical number ("3", "16"), in one pass.
	i := from
	for ; i < len(buf) && i-from < 18; i++ {
		c := buf[i]
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	if i > from && i+1 < len(buf) && buf[i] == '\r' && buf[i+1] == '\n' && (buf[from] != '0' || i == from+1) {
		return v, i + 2, nil
	}
	cr := bytes.IndexByte(buf[from:], '\r')
	if cr < 0 {
		if len(buf)-from > maxCountLine {
			return 0, 0, tooBig
		}
		return 0, 0, nil
	}
	if from+cr+1 >= len(buf) {
		return 0, 0, nil // wait for the '\n'
	}
	v, ok := parse.Int(buf[from : from+cr])
	if !ok {
		v = 1 << 62
	}
	return v, from + cr + 2, nil
}

// readInline parses a telnet-style command line, split as Redis's
// sdssplitargs splits it: spaces separate arguments, "double quotes" take
// \n \r \t \b \a \\ \" and \xHH escapes, 'single quotes' take \'.
func readInline(buf []byte, args [][]byte, scratch *[]byte, lim *ReaderLimits) ([][]byte, int, error) {
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		if len(buf) > lim.MaxInline {
			return args, 0, errProtoBigInline
		}
		return args, 0, nil
	}
	if nl > lim.MaxInline {
		return args, 0, errProtoBigInline
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, err := splitArgs(line, args, scratch)
	if err != nil {
		return args[:0], 0, err
	}
	if int64(len(args)) > lim.MaxArgs {
		return args[:0], 0, errProtoMultibulkLen
	}
	return args, nl + 1, nil
}

// splitArgs splits line into args the way Redis's sdssplitargs does,
// unquoting into *scratch: spaces separate arguments; a double quote starts
// a quoted part that takes \n \r \t \b \a \xHH and \<any> escapes; a
// single quote starts one that takes \'; a closing quote must be followed
// by a space or the end of the line. Unlike Redis, a NUL byte is an ordinary
// byte rather than the end of the line. *scratch is grown once to len(line)
// so that earlier arguments never move.
func splitArgs(line []byte, args [][]byte, scratch *[]byte) ([][]byte, error) {
	if cap(*scratch) < len(line) {
		*scratch = make([]byte, 0, len(line))
	}
	out := (*scratch)[:0]
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		start := len(out)
		var inDouble, inSingle bool
	token:
		for i < len(line) {
			c := line[i]
			switch {
			case inDouble:
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					out = append(out, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					out = append(out, unescape(line[i]))
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return args, errProtoUnbalanced // closing quote must be followed by a space
					}
					i, inDouble = i+1, false
					break token
				default:
					out = append(out, c)
				}
			case inSingle:
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					out = append(out, '\'')
					i++
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return args, errProtoUnbalanced
					}
					i, inSingle = i+1, false
					break token
				default:
					out = append(out, c)
				}
			case c == ' ' || c == '\n' || c == '\r' || c == '\t':
				break token // as sdssplitargs: \v and \f end no unquoted argument
			case c == '"':
				inDouble = true
			case c == '\'':
				inSingle = true
			default:
				out = append(out, c)
			}
			i++
		}
		if inDouble || inSingle {
			return args, errProtoUnbalanced // the line ended inside quotes
		}
		args = append(args, out[start:len(out):len(out)])
	}
}

// unescape maps the character after a backslash inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	default:
		return c
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
