package bot

// Callback data is what a button sends back (Telegram allows 64 bytes). Buttons stay in chats
// for as long as the chat is kept, so these codes are a wire format: renaming one breaks the
// buttons already sent.
//
//	x                      dismiss a revoke/rotate question
//	s:<session>:<op>       a key-creation or key-editing session's step
//	k:<action>:<key id>    a /keys button
//	ky:<action>:<key id>   a revoke or rotate, confirmed
const (
	cbDismiss      = "x"
	cbSession      = "s"
	cbKey          = "k"
	cbKeyConfirmed = "ky"
	cbSep          = ":"
)

// A session's ops (s:<session>:<op>). A toggle is its list's code and the option's index, or
// the list's code and opAll.
const (
	opCancel    = "x"
	opNext      = "n"  // next step, or save an edited key
	opCreate    = "ok" // create the key (last step)
	opEndpoints = 'e'  // toggle an endpoint family
	opModels    = 'm'  // toggle a model
	opAll       = "a"  // toggle "all, including future ones"
)

// A key's actions (k:<action>:<key id> and ky:<action>:<key id>).
const (
	keyModels    = "m" // edit the key's models
	keyEndpoints = "e" // edit the key's endpoint families
	keyRotate    = "o"
	keyRevoke    = "r"
)

// keyActive is a usable key's state as the AdminService sends it (the gateway's
// store.KeyActive; the bot imports only core/wire, so it names the value itself).
const keyActive = "ACTIVE"
