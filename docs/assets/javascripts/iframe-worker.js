/*
 * Web workers for a site opened from disk. Browsers refuse to start a Worker from a file:// page, and the
 * theme's search runs in one; so on file:// pages `Worker` is replaced by a stand-in that runs the worker's
 * script in a hidden iframe and passes the messages both ways. The theme's offline plugin would otherwise
 * load such a stand-in from a CDN at view time (it looks for "iframe-worker" in the site's polyfills).
 * Only what the search worker needs is provided: postMessage and message events both ways, terminate.
 */
(function () {
  "use strict";
  if (location.protocol !== "file:") {
    return;
  }

  function later(callback) {
    setTimeout(callback, 0); // messages are delivered asynchronously, as a real worker's are
  }

  class FrameWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.onerror = null;
      this._pending = [];
      this._ready = false;
      this._frame = document.createElement("iframe");
      this._frame.style.display = "none";
      this._frame.setAttribute("aria-hidden", "true");
      (document.body || document.documentElement).appendChild(this._frame);
      const scope = this._frame.contentWindow;
      // The worker's own side: what it posts arrives here, what we post is a message event on its global.
      scope.postMessage = (data) => later(() => this._emit("message", new MessageEvent("message", { data })));
      scope.importScripts = () => {
        throw new Error("importScripts is not available to a worker run from a file:// page");
      };
      const script = scope.document.createElement("script");
      script.src = new URL(String(url), document.baseURI).href;
      script.onload = () => {
        this._ready = true;
        this._pending.splice(0).forEach((data) => this._deliver(data));
      };
      script.onerror = () => later(() => this._emit("error", new ErrorEvent("error", {
        message: "the worker script " + script.src + " could not be loaded",
      })));
      scope.document.head.appendChild(script);
    }

    postMessage(data) {
      if (this._ready) {
        this._deliver(data);
      } else {
        this._pending.push(data);
      }
    }

    terminate() {
      this._frame.remove();
    }

    _deliver(data) {
      const scope = this._frame.contentWindow;
      if (scope) {
        later(() => scope.dispatchEvent(new scope.MessageEvent("message", { data })));
      }
    }

    _emit(type, event) {
      const handler = type === "message" ? this.onmessage : this.onerror;
      if (typeof handler === "function") {
        handler.call(this, event);
      }
      this.dispatchEvent(event);
    }
  }

  window.Worker = FrameWorker;
})();
