package prombridge

import (
	"errors"
	"fmt"
)

// maxErrors is how many errors of one refresh Err lists; the others are
// counted.
const maxErrors = 10

// errorList gathers the errors of one refresh.
type errorList struct {
	errs []error
	more int
}

func (l *errorList) add(err error) {
	if len(l.errs) < maxErrors {
		l.errs = append(l.errs, err)
	} else {
		l.more++
	}
}

// err returns the errors joined, nil when there are none.
func (l *errorList) err() error {
	if l.more > 0 {
		return errors.Join(append(l.errs, fmt.Errorf("prombridge: %d more errors", l.more))...)
	}
	return errors.Join(l.errs...)
}
