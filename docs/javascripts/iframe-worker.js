/* Search from files: a Web Worker for a site opened from the file system.

   Chromium refuses `new Worker("file:///...")`, so MkDocs Material's search worker never starts on a site
   opened from files. Served (http), nothing here runs. From files, `Worker` becomes a hidden same-origin
   iframe that runs the worker's script, with `postMessage` and the `message` event bridged both ways and
   `importScripts` loading scripts in order (Material awaits it). It stands in for the iframe-worker shim
   that Material's offline plugin would fetch from unpkg.com: the docs load nothing from another host.
   The offline plugin leaves a polyfill whose name contains "iframe-worker" as it is (mkdocs.yml). */
(function () {
  "use strict";
  if (location.protocol !== "file:" || window.cnsIframeWorker) return;
  window.cnsIframeWorker = true;

  class IFrameWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.onerror = null;
      this.queue = [];
      this.ready = false;
      const frame = document.createElement("iframe");
      frame.hidden = true;
      frame.title = "search worker";
      frame.setAttribute("aria-hidden", "true");
      (document.body || document.documentElement).appendChild(frame);
      this.frame = frame;
      const scope = frame.contentWindow;
      const host = this;
      scope.postMessage = (data) => host.deliver(data);
      scope.importScripts = (...urls) => urls.reduce((done, src) => done.then(() => load(scope, src)),
                                                     Promise.resolve());
      scope.close = () => host.terminate();
      load(scope, new URL(url, location.href).href).then(() => {
        this.ready = true;
        this.queue.splice(0).forEach((data) => this.postMessage(data));
      }, (error) => this.fail(error));
    }

    postMessage(data) {
      if (!this.ready) {
        this.queue.push(data);
        return;
      }
      const scope = this.frame.contentWindow;
      if (!scope) return;
      const copy = scope.structuredClone(data);
      setTimeout(() => scope.dispatchEvent(new scope.MessageEvent("message", { data: copy })), 0);
    }

    deliver(data) {
      const event = new MessageEvent("message", { data: structuredClone(data) });
      setTimeout(() => {
        if (typeof this.onmessage === "function") this.onmessage(event);
        this.dispatchEvent(event);
      }, 0);
    }

    fail(error) {
      const event = new ErrorEvent("error", { message: String(error) });
      if (typeof this.onerror === "function") this.onerror(event);
      this.dispatchEvent(event);
    }

    terminate() {
      this.frame.remove();
    }
  }

  function load(scope, src) {
    return new Promise((resolve, reject) => {
      const script = scope.document.createElement("script");
      script.src = src;
      script.onload = () => resolve();
      script.onerror = () => reject(new Error(`could not load ${src}`));
      (scope.document.body || scope.document.documentElement).appendChild(script);
    });
  }

  window.Worker = IFrameWorker;
})();
