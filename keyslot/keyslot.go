package keyslot

// Slots is the number of hash slots, as in Redis Cluster.
const Slots = 16384

// Of returns key's slot, 0 to Slots-1: the CRC16 of its hash tag if it
// has one (HashTag), else of the whole key, modulo Slots. It allocates
// nothing and is safe for concurrent use.
func Of(key []byte) int {
	return int(CRC16(HashTag(key)) & (Slots - 1))
}

// HashTag returns the part of key that Of hashes, as Redis's keyHashSlot
// chooses it: the bytes between the first '{' and the first '}' after it,
// if there is such a '}' and it does not follow the '{' at once; else the
// whole key. So "{user1000}.following" hashes "user1000", "foo{}{bar}"
// the whole key and "foo{{bar}}zap" "{bar". The result aliases key.
func HashTag(key []byte) []byte {
	for s := 0; s < len(key); s++ {
		if key[s] != '{' {
			continue
		}
		for e := s + 1; e < len(key); e++ {
			if key[e] == '}' {
				if e == s+1 {
					return key // "{}": the whole key
				}
				return key[s+1 : e]
			}
		}
		return key // no '}' after the first '{'
	}
	return key
}

// CRC16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum of Redis's crc16.c: CRC16("123456789") is
// 0x31C3.
func CRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

// crcTable holds the CRC of each byte value, computed once.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
