package yamljson

import "testing"

func TestConvertKeepsAmountsExact(t *testing.T) {
	t.Parallel()
	got, err := Convert([]byte("a: 123456789012345.123456789\nb: 7\nc: [x, null, true]\nd: '15.00'\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":"123456789012345.123456789","b":7,"c":["x",null,true],"d":"15.00"}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := Convert([]byte("a: [")); err == nil {
		t.Error("broken YAML converted")
	}
}
