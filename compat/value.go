package compat

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/sluice-rl/sluice/internal/parse"
)

// Kind says what a key holds, as a script sees it. The values are stored
// (snapshots, the Raft log): new kinds are added at the end.
type Kind uint8

const (
	// Absent: no key.
	Absent Kind = iota
	// Int: a string that is a canonical integer ("42", "-7"), the only
	// strings INCRBY accepts: INCRBY's result, TIME's seconds, a Lua number
	// with an integral value below 1e17.
	Int
	// Float: the string Redis 7.0 makes of any other Lua number passed to
	// redis.call, formatted "%.17g" ("0.10000000000000001", "1e+17", "-0",
	// "inf", "-nan").
	Float
	// Bytes: any other string of at most MaxBytes bytes, kept verbatim.
	Bytes
	// Foreign: the key holds another kind of state (not a string). String
	// commands on it fail with WRONGTYPE; PTTL, SET and DEL work as on any key.
	Foreign
	// List: a Redis list of numbers (Python limits' moving window), its
	// elements in Key.List. String commands on it fail with WRONGTYPE.
	List
)

// MaxBytes is the longest string a Bytes value holds. Every string the
// supported scripts write is an Int or a Float; Bytes exists so that a plain
// SET of a short non-numeric string can be kept too: a lock's token (redis-py's
// Lock: 32 hex digits), a UUID, a flag.
const MaxBytes = 64

// inlineBytes is how many of a Bytes value's bytes fit in the three words of
// Pack; the rest go to PackExt's words.
const inlineBytes = 22

// Value is a key's value: pointer-free, 80 bytes, and packs into the three
// words of a keyspace entry (Pack, Unpack), with the bytes of a string longer
// than 22 bytes in words of the entry's variable part (PackExt, UnpackExt). Each string has exactly one
// representation (an Int never appears as Float or Bytes, a Float never as
// Bytes), so equal strings are equal Values. The zero value is Absent.
type Value struct {
	kind Kind
	n    uint8 // Bytes: length
	b    [MaxBytes]byte
	num  uint64 // Int: the int64; Float: the float64's bits
}

// IntValue is the canonical integer string of i.
func IntValue(i int64) Value { return Value{kind: Int, num: uint64(i)} }

// ForeignValue is a key that holds another kind of state.
func ForeignValue() Value { return Value{kind: Foreign} }

// ListValue is a key that holds a list; its elements are Key.List.
func ListValue() Value { return Value{kind: List} }

// wrongType reports whether a string command on v fails with WRONGTYPE.
func (v Value) wrongType() bool { return v.kind == Foreign || v.kind == List }

// NumberValue is the string Redis 7.0 stores when a script passes the Lua
// number f to a command (SET key f): "%.17g" of f.
func NumberValue(f float64) Value {
	if f == math.Trunc(f) && math.Abs(f) < 1e17 && !(f == 0 && math.Signbit(f)) {
		return IntValue(int64(f))
	}
	return Value{kind: Float, num: math.Float64bits(f)}
}

// StringValue is the value of the string s (a plain SET, a Lua string passed
// to a command). ok is false if s is none of the representable strings: not
// an integer, not a "%.17g" number and longer than MaxBytes.
func StringValue(s []byte) (v Value, ok bool) {
	if i, ok := parse.Int(s); ok {
		return IntValue(i), true
	}
	if f, ok := str2d(s); ok {
		var buf [32]byte
		if v := NumberValue(f); string(v.AppendString(buf[:0])) == string(s) {
			return v, true
		}
	}
	if len(s) > MaxBytes {
		return Value{}, false
	}
	v = Value{kind: Bytes, n: uint8(len(s))}
	copy(v.b[:], s)
	return v, true
}

// Kind returns what v holds.
func (v Value) Kind() Kind { return v.kind }

// IsString reports whether v is a string (Int, Float or Bytes).
func (v Value) IsString() bool { return v.kind == Int || v.kind == Float || v.kind == Bytes }

// Int returns an Int value's integer.
func (v Value) Int() (int64, bool) { return int64(v.num), v.kind == Int }

// AppendString appends the string GET returns for v (nothing for a value
// that is not a string).
func (v Value) AppendString(dst []byte) []byte {
	switch v.kind {
	case Int:
		return strconv.AppendInt(dst, int64(v.num), 10)
	case Float:
		return appendG(dst, math.Float64frombits(v.num), 17)
	case Bytes:
		return append(dst, v.b[:v.n]...)
	}
	return dst
}

// number is Lua's tonumber() of the string v (ok is false where tonumber
// gives nil).
func (v Value) number() (float64, bool) {
	switch v.kind {
	case Int:
		return float64(int64(v.num)), true
	case Float:
		// "%.17g" reads back to the same number, NaN's sign included.
		return math.Float64frombits(v.num), true
	case Bytes:
		return str2d(v.b[:v.n])
	}
	return 0, false
}

// Pack encodes v in three words (byte 0: kind, byte 1: length; Int and
// Float: word 1; Bytes: bytes 2 to 23, the first 22 bytes of the string).
// UnpackExt(v.Pack(), v.PackExt(nil)) == v.
func (v Value) Pack() [3]int64 {
	var raw [24]byte
	raw[0], raw[1] = byte(v.kind), v.n
	if v.kind == Bytes {
		copy(raw[2:], v.b[:min(v.n, inlineBytes)])
	} else {
		binary.LittleEndian.PutUint64(raw[8:], v.num)
	}
	return [3]int64{
		int64(binary.LittleEndian.Uint64(raw[0:])),
		int64(binary.LittleEndian.Uint64(raw[8:])),
		int64(binary.LittleEndian.Uint64(raw[16:])),
	}
}

// PackExt appends to dst the words that hold a Bytes value's bytes past
// the 22 that Pack holds, eight to a word, the last one padded with zeros;
// it appends nothing for a shorter string or any other kind.
func (v Value) PackExt(dst []int64) []int64 {
	if v.kind != Bytes || v.n <= inlineBytes {
		return dst
	}
	var raw [MaxBytes - inlineBytes + 7]byte
	rest := raw[:copy(raw[:], v.b[inlineBytes:v.n])]
	for i := 0; i < len(rest); i += 8 {
		dst = append(dst, int64(binary.LittleEndian.Uint64(raw[i:])))
	}
	return dst
}

// extWords is how many words PackExt writes for a string of n bytes.
func extWords(n int) int { return (max(n-inlineBytes, 0) + 7) / 8 }

// UnpackExt decodes the words written by Pack and PackExt. A kind it does
// not know, a length beyond MaxBytes, or ext words that do not fit the
// length are reported with ok false.
func UnpackExt(w [3]int64, ext []int64) (v Value, ok bool) {
	var raw [24]byte
	binary.LittleEndian.PutUint64(raw[0:], uint64(w[0]))
	binary.LittleEndian.PutUint64(raw[8:], uint64(w[1]))
	binary.LittleEndian.PutUint64(raw[16:], uint64(w[2]))
	v.kind, v.n = Kind(raw[0]), raw[1]
	if v.kind != Bytes && len(ext) != 0 {
		return Value{}, false
	}
	switch v.kind {
	case Absent, Foreign, List:
		return Value{kind: v.kind}, true
	case Int, Float:
		v.n = 0
		v.num = binary.LittleEndian.Uint64(raw[8:])
		return v, true
	case Bytes:
		if v.n > MaxBytes || len(ext) != extWords(int(v.n)) {
			return Value{}, false
		}
		copy(v.b[:], raw[2:2+min(v.n, inlineBytes)])
		var word [8]byte
		for i, x := range ext {
			binary.LittleEndian.PutUint64(word[:], uint64(x))
			copy(v.b[inlineBytes+8*i:v.n], word[:])
		}
		return v, true
	}
	return Value{}, false
}

// Unpack decodes three words written by Pack for a value that PackExt
// writes nothing for (UnpackExt decodes the others). A kind it does not
// know, or a length beyond what three words hold, is reported with ok false.
func Unpack(w [3]int64) (v Value, ok bool) { return UnpackExt(w, nil) }

// appendG appends f the way C's printf("%.<prec>g") does on glibc: Lua's
// tostring uses precision 14, Redis 7.0's number arguments precision 17.
// Infinities are "inf" and "-inf"; a NaN is "nan" or "-nan" by its sign bit.
func appendG(dst []byte, f float64, prec int) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f != f:
		if math.Signbit(f) {
			return append(dst, "-nan"...)
		}
		return append(dst, "nan"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < pow10[prec] && !(f == 0 && math.Signbit(f)) {
		// An integer of at most prec digits: %g prints its digits, no
		// exponent, no point ("-0" aside, which takes the general path).
		return strconv.AppendInt(dst, int64(f), 10)
	}
	// Go's 'g' with an explicit precision matches C's %g: the same switch to
	// an exponent (exponent < -4 or ≥ precision), trailing zeros removed, and
	// at least two exponent digits.
	return strconv.AppendFloat(dst, f, 'g', prec, 64)
}

// NoExpire is Key.Expire for a key without a TTL (PTTL -1).
const NoExpire = math.MaxInt64

// Key is one key a script reads or writes: its value and its expiry.
type Key struct {
	Value Value
	// Expire is the unix instant (ns) from which the key is gone: it is
	// live while now < Expire, like a keyspace entry. NoExpire means no TTL.
	// Redis keeps expiries in whole milliseconds and a key is still there
	// during its last millisecond, so a key that Redis would expire at
	// expire_ms gets Expire = (expire_ms+1)·10⁶. Expiries beyond the int64
	// nanosecond range (the year 2262) are kept as NoExpire-1.
	Expire int64
	// List holds a List value's elements, head first, each the bits of the
	// float64 whose "%.17g" string Redis holds (every element a script
	// pushes is a Lua number). Loaded, it may alias the keyspace's memory;
	// a script that writes it points it at its Call's own room.
	List []int64
	// Written is set by Run when the script wrote the key (its value or its
	// TTL). The caller then stores Value and Expire, or deletes the key if
	// Value is Absent. Run never clears it.
	Written bool
}

// Live reports whether k holds anything at now.
func (k *Key) Live(now int64) bool { return k.Value.kind != Absent && now < k.Expire }

// PTTL is Redis's PTTL of k at now: -2 if there is no key, -1 if it has no
// TTL, else the milliseconds left (Redis's expire_ms minus the current
// millisecond, never below 0).
func (k *Key) PTTL(now int64) int64 {
	switch {
	case !k.Live(now):
		return -2
	case k.Expire == NoExpire:
		return -1
	}
	return max(lastMs(k.Expire)-unixMs(now), 0)
}

// TTL is Redis's TTL of k at now: PTTL rounded to the nearest second.
func (k *Key) TTL(now int64) int64 {
	ms := k.PTTL(now)
	if ms < 0 {
		return ms
	}
	return (ms + 500) / 1000
}

// unixMs is the millisecond Redis's mstime() reads at the instant now (ns).
func unixMs(now int64) int64 {
	if now < 0 {
		return -((-now + 999_999) / 1_000_000)
	}
	return now / 1_000_000
}

// lastMs is the last millisecond during which a key with this Expire is
// live: Redis's expire_ms.
func lastMs(expire int64) int64 {
	return unixMs(expire - 1) // expire-1 is the last live nanosecond
}

// expireAtMs is the Expire of a key that Redis expires at the unix
// millisecond ms.
func expireAtMs(ms int64) int64 {
	switch {
	case ms >= (NoExpire-1)/1_000_000-1:
		return NoExpire - 1
	case ms < math.MinInt64/1_000_000:
		return math.MinInt64
	}
	return (ms + 1) * 1_000_000
}
