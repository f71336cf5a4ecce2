package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// Passwords are kept as the lower-case hex SHA-256 of the password, as
// Redis keeps them (ACL LIST and the aclfile show them after a #).

// HashPassword returns the hex SHA-256 of password, the form a #rule takes.
func HashPassword(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

// validHash reports whether h is 64 lower-case hex digits.
func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkPassword reports whether password hashes to one of hashes. It
// compares every stored hash in full, in constant time, so that the time
// taken says nothing about how much of a hash matched.
func checkPassword(hashes []string, password string) bool {
	sum := sha256.Sum256([]byte(password))
	var want [sha256.Size]byte
	ok := 0
	for _, h := range hashes {
		if _, err := hex.Decode(want[:], []byte(h)); err != nil {
			continue
		}
		ok |= subtle.ConstantTimeCompare(sum[:], want[:])
	}
	return ok == 1
}
