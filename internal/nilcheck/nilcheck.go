// Package nilcheck tells whether an interface value is nil in effect: a
// constructor that returns a nil pointer with an error the caller ignored
// (llm, _ := openai.New()) yields a non-nil interface holding a nil
// pointer, which panics on first use. Strata's constructors refuse such
// values up front with this one check.
package nilcheck

import "reflect"

// IsNil reports whether v is nil or holds a nil pointer, map, slice,
// function, channel, interface or unsafe pointer.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
