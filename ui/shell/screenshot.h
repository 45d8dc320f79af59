// `expnet-studio --screenshot FILE`: render the window, wait for the page's
// pending work, save a PNG and FILE.json describing what the page shows.
#pragma once

#include <QString>

class MainWindow;
class StudioContext;

struct ScreenshotRequest {
  QString file;
  int timeoutMs = 120000;  // longest wait for pending work
};

// Returns 0 on success, non-zero (with a message on stderr) on failure.
int takeScreenshot(MainWindow& window, const StudioContext& context, const ScreenshotRequest& request);
