package viewer_test

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/lochdata/loch/viewer"
)

// Serve a dataset (or a catalog root) the way 'loch serve' does: Guard
// picks the Host list for a loopback listener, or a token for any other.
func Example() {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	token, hosts := viewer.Guard(ln.Addr())
	s, err := viewer.New(ctx, "s3://bucket/pets", viewer.Options{Token: token, Hosts: hosts})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println("open http://" + ln.Addr().String() + "/")
	fmt.Println(http.Serve(ln, s)) // until the listener closes
}
