"""`python -m mplint.verify.probe REQUEST EVENTS`"""

import sys

from . import main

sys.exit(main())
