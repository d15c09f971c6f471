package bridge

import "github.com/gopcp/mmv/internal/pcpname"

// Help returns the help text of a metric of the short help short (one
// line) and the long help long ("" for none), as mmv takes it whatever
// the source's text: a help text is only shown, and mmv's refusal of one
// refused the family or instrument and every value of it. Each part has
// its NUL bytes, which mmv refuses (PCP's strings end at one), made
// spaces, and is cut to the 255 bytes PCP keeps, as every help text of
// the module is (pcpname.Help).
func Help(short, long string) string {
	if long == "" {
		return pcpname.Help(short)
	}
	return pcpname.Help(short) + "\n" + pcpname.Help(long)
}
