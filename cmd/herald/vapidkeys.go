package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/heraldhq/herald/internal/webpush"
)

// runVAPIDKeys prints a new VAPID key pair for Web Push: the public key is
// the VapidPublicKey template parameter (and the browsers'
// applicationServerKey); the private key belongs in the SSM SecureString
// parameter named by VapidPrivateKeyParameter, nowhere else.
func runVAPIDKeys(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("vapid-keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, `print {"publicKey","privateKey"} instead of environment lines`)
	parameter := fs.String("parameter", "/herald/vapid-private-key", "SSM parameter name shown in the instructions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("vapid-keys takes no arguments")
	}
	keys, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"publicKey": keys.PublicKey, "privateKey": keys.PrivateKey})
	}
	fmt.Fprintf(stdout, "VAPID_PUBLIC_KEY=%s\nVAPID_PRIVATE_KEY=%s\n", keys.PublicKey, keys.PrivateKey)
	fmt.Fprintf(stderr, `
Store the private key in SSM (never in the template or a log):
  aws ssm put-parameter --name %s --type SecureString --value "$VAPID_PRIVATE_KEY"
Deploy with the public key:
  sam deploy --parameter-overrides VapidPublicKey=%s
`, *parameter, keys.PublicKey)
	return nil
}
