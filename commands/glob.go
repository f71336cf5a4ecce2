package commands

// globMatch reports whether str matches the glob pattern the way Redis's
// stringmatchlen does: * any run, ? any byte, [abc] [^abc] [a-z] classes,
// and \ to take the next byte literally. nocase folds ASCII letters.
func globMatch(pattern, str []byte, nocase bool) bool {
	return globMatchDepth(pattern, str, nocase, 0)
}

// globMatchDepth bounds the recursion that runs of * cause, as Redis 7.0.x
// does, so a hostile pattern costs bounded stack and time.
func globMatchDepth(pattern, str []byte, nocase bool, depth int) bool {
	if depth > 1000 {
		return false
	}
	for len(pattern) > 0 && len(str) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for len(str) > 0 {
				if globMatchDepth(pattern[1:], str, nocase, depth+1) {
					return true
				}
				str = str[1:]
			}
			return false
		case '?':
			str = str[1:]
		case '[':
			pattern = pattern[1:]
			not := len(pattern) > 0 && pattern[0] == '^'
			if not {
				pattern = pattern[1:]
			}
			match := false
			for {
				if len(pattern) == 0 {
					break
				}
				if pattern[0] == '\\' && len(pattern) >= 2 {
					pattern = pattern[1:]
					if pattern[0] == str[0] {
						match = true
					}
				} else if pattern[0] == ']' {
					break
				} else if len(pattern) >= 3 && pattern[1] == '-' {
					start, end, c := pattern[0], pattern[2], str[0]
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = lower(start), lower(end), lower(c)
					}
					pattern = pattern[2:]
					if c >= start && c <= end {
						match = true
					}
				} else if fold(pattern[0], nocase) == fold(str[0], nocase) {
					match = true
				}
				pattern = pattern[1:]
			}
			if len(pattern) == 0 {
				return false // unterminated class: Redis treats the pattern as ending here
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			str = str[1:]
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if fold(pattern[0], nocase) != fold(str[0], nocase) {
				return false
			}
			str = str[1:]
		}
		pattern = pattern[1:]
		if len(str) == 0 {
			for len(pattern) > 0 && pattern[0] == '*' {
				pattern = pattern[1:]
			}
			break
		}
	}
	return len(pattern) == 0 && len(str) == 0
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func fold(c byte, nocase bool) byte {
	if nocase {
		return lower(c)
	}
	return c
}
