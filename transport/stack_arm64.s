#include "funcdata.h"
#include "textflag.h"

// func growStack(): a 32 KiB frame that holds no pointers
// and is never written.
TEXT ·growStack(SB), 0, $32768-0
	NO_LOCAL_POINTERS
	RET
