/* the upper library of the fixture: see low.h */
#pragma once

/* watches the lower library, changes it, and returns what its handler was told */
int high_run (void);
