package policy

// AppendStatsKey appends to dst the name envoyproxy/ratelimit gives the
// limit that descriptor d matches under domain, the prefix of its metrics
// ("domain.key_value.subkey" + ".total_hits", …), and reports whether a
// limit applies (a rule with a rate_limit, unlimited ones included, or the
// descriptor's own limit). The name follows that service's rules:
//
//   - the rule's path, each level written key, or key_value when the rule
//     has a value (a wildcard rule writes its pattern);
//   - value_to_metric on a level writes the request's value instead of the
//     pattern (or after a value-less key);
//   - share_threshold on a wildcard level writes the pattern, always;
//   - detailed_metric on the matched rule writes every entry as key_value
//     from the request (share_threshold levels keep their pattern);
//   - a descriptor's own limit writes its entries, key or key_value.
//
// It is meant for metrics, not for the hot path: it walks the tree again.
func (rs *RuleSet) AppendStatsKey(dst, domain []byte, d Descriptor) ([]byte, bool) {
	if rs == nil {
		return dst, false
	}
	dr := rs.domains[string(domain)]
	if dr == nil {
		return dst, false
	}
	if d.Limit.Unit != UnitUnknown {
		dst = append(dst, domain...)
		dst = append(dst, '.')
		for i, e := range d.Entries {
			if i > 0 {
				dst = append(dst, '.')
			}
			dst = append(dst, e.Key...)
			if len(e.Value) > 0 {
				dst = append(dst, '_')
				dst = append(dst, e.Value...)
			}
		}
		return dst, true
	}
	var path [8]*rule
	leaf, _, _ := dr.match(d.Entries, path[:0])
	if leaf == nil {
		return dst, false
	}
	share := false // does a level share its threshold through a wildcard match?
	lv := &dr.root
	for _, e := range d.Entries {
		m, via := lv.step(e)
		if via == viaWildcard && m.share {
			share = true
		}
		lv = &m.children
	}
	dst = append(dst, domain...)
	lv = &dr.root
	for _, e := range d.Entries {
		m, via := lv.step(e)
		lv = &m.children
		dst = append(dst, '.')
		dst = append(dst, e.Key...)
		switch {
		case leaf.detailed && via == viaWildcard && m.share:
			dst = append(dst, '_')
			dst = append(dst, m.value...)
		case leaf.detailed && share:
			if len(e.Value) > 0 {
				dst = append(dst, '_')
				dst = append(dst, e.Value...)
			}
		case leaf.detailed:
			dst = append(dst, '_')
			dst = append(dst, e.Value...)
		case via == viaWildcard && (m.share || !m.valueToMet):
			dst = append(dst, '_')
			dst = append(dst, m.value...)
		case via == viaExact || m.valueToMet:
			if len(e.Value) > 0 {
				dst = append(dst, '_')
				dst = append(dst, e.Value...)
			}
		}
	}
	return dst, true
}
