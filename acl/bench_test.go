package acl

import "testing"

// The cost of a permission check on the hot path: the default user's
// (allcommands allkeys: one branch), and a restricted user's, who pays for
// its command bit and its key pattern.

func benchCheck(b *testing.B, rules []string, line ...string) {
	reg := sluiceRegistry(b)
	us := NewUsers(reg)
	u := us.Default()
	if rules != nil {
		if err := us.SetUser("u", rules...); err != nil {
			b.Fatal(err)
		}
		u = us.Get("u")
	}
	c := reg.Lookup(line[0])
	a := argv(line...)
	want := u.Perms().Check(c, a)
	b.ReportAllocs()
	for b.Loop() {
		if u.Perms().Check(c, a) != want {
			b.Fatal("verdict changed")
		}
	}
}

func BenchmarkCheckDefaultUser(b *testing.B) {
	benchCheck(b, nil, "rl.token", "tenant-a:user:42", "10/s", "20")
}

func BenchmarkCheckRestrictedUser(b *testing.B) {
	benchCheck(b, []string{"on", "~tenant-a:*", "+@limiter"}, "rl.token", "tenant-a:user:42", "10/s", "20")
}

func BenchmarkCheckRestrictedUserDenied(b *testing.B) {
	benchCheck(b, []string{"on", "~tenant-a:*", "+@limiter"}, "rl.token", "tenant-b:user:42", "10/s", "20")
}

// Eight patterns, the key matching the last one.
func BenchmarkCheckRestrictedUserEightPatterns(b *testing.B) {
	benchCheck(b, []string{"on", "~t1:*", "~t2:*", "~t3:*", "~t4:*", "~t5:*", "~t6:*", "~*:user:[0-9]*:x", "~tenant-a:*", "+@limiter"},
		"rl.token", "tenant-a:user:42", "10/s", "20")
}

// Allowed commands but every key: the command bit alone.
func BenchmarkCheckCommandBitOnly(b *testing.B) {
	benchCheck(b, []string{"on", "allkeys", "+@limiter"}, "rl.token", "tenant-a:user:42", "10/s", "20")
}
